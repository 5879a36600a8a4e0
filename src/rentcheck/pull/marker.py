"""PULL_VERIFIED.json: written only for a clean verification, checked again before teardown."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import platform
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rentcheck.errors import FormatError, GateError
from rentcheck.model import Finding, Severity
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.manifest import MAX_MANIFEST_BYTES, Roster, read_roster_document
from rentcheck.pull.rules import RULES_BY_CODE, VERIFIED_MARKER_STALE
from rentcheck.pull.verdicts import Row, Verdicts, rows_of
from rentcheck.pull.verify import FileVerdict, VerifyResult

__all__ = [
    "VERIFIED_SCHEMA",
    "VerifiedMarker",
    "load_verified_marker",
    "marker_drift",
    "write_verified_marker",
]

VERIFIED_SCHEMA = "rentcheck/pull-verified/v1"


@dataclass(frozen=True)
class VerifiedMarker:
    run_id: str
    manifest_sha256: str
    verified_at: str
    files: Roster  # path, size, mtime_ns, sha256 of every verified file, in path order
    raw: Mapping[str, Any]  # the other top-level values (``files`` is None here)


def _version() -> str:
    from rentcheck import __version__  # not importlib.metadata: 25 ms of start-up per run

    return __version__


def write_verified_marker(
    result: VerifyResult,
    marker_path: str | os.PathLike[str] | None = None,
    *,
    fail_level: Severity = Severity.ERROR,
    allow: Iterable[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write the marker atomically; GateError (nothing written) unless the result is clean.

    Clean means: verified against a manifest, at least one file, every manifest file read, and
    no finding at or above ``fail_level`` other than those whose code is in ``allow`` (findings
    the settings make advisory, e.g. NaN/Inf under ``nonfinite = "warn"``).
    """
    allowed = frozenset(allow)
    blocking = [f for f in result.findings if f.severity >= fail_level and f.code not in allowed]
    if result.manifest is None:
        raise GateError(
            "refusing to write PULL_VERIFIED.json without a valid manifest",
            "build PULL_MANIFEST.json on the box and pull it",
        )
    if blocking:
        raise GateError(
            f"refusing to write PULL_VERIFIED.json: {len(blocking)} findings at "
            f"{fail_level.label} or above",
            "fix them and verify again",
        )
    if not result.every_listed_file_read():
        raise GateError(
            "refusing to write PULL_VERIFIED.json: not every manifest file was read", "verify again"
        )
    path = Path(marker_path) if marker_path else Path(result.root) / builder.VERIFIED_NAME
    payload = {
        "schema": VERIFIED_SCHEMA,
        "run_id": result.manifest.run_id,
        "manifest_sha256": result.manifest.sha256,
        "verified_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "verifier": {"rentcheck": _version(), "python": platform.python_version()},
        "policy": {
            "deep": result.deep,
            "hash": "sha256",
            "extra_allowed_globals": list(result.extra_allowed_globals),
            "fail_level": fail_level.label,
            "advisory_codes": sorted(allowed),
        },
        "findings_below_fail_level": len(result.findings),
        "files": [],
        "totals": {"files": len(result.files), "bytes": _total_bytes(result.files)},
        **(dict(extra) if extra else {}),
    }
    with builder.AtomicFile(os.fspath(path)) as out:
        for piece in _dumps(payload, rows_of(result.files)):
            out.write(piece)
    return path


def _total_bytes(files: Sequence[FileVerdict]) -> int:
    return files.total_bytes() if isinstance(files, Verdicts) else sum(v.size for v in files)


_STR = json.JSONEncoder(ensure_ascii=False).encode


def _row(row: Row) -> str:
    """``json.dumps(file, sort_keys=True)`` of one file, indented; a template, not the encoder."""
    path, size, mtime_ns, sha256 = row[:4]
    sha = "null" if sha256 is None else f'"{sha256}"'
    return f'    {{"mtime_ns": {mtime_ns}, "path": {_STR(path)}, "sha256": {sha}, "size": {size}}}'


def _dumps(payload: Mapping[str, Any], rows: Iterable[Row]) -> Iterator[bytes]:
    """``builder.dumps(payload)`` with one file per row in its ``files``, one line per file
    from a template (the indenting encoder is pure Python: 0.5 s for 20,000 files), in pieces
    of a few hundred files, so a large roster is never held as text."""
    head = builder.dumps({**payload, "files": []}).decode()  # ``files`` go in its place
    before, after = head.split('\n  "files": []', 1)
    rows = iter(rows)
    piece = list(itertools.islice(rows, 512))
    if not piece:
        yield head.encode()
        return
    yield (before + '\n  "files": [\n').encode()
    while piece:
        text = ",\n".join(map(_row, piece))
        piece = list(itertools.islice(rows, 512))
        yield (text + (",\n" if piece else "\n  ]")).encode()
    yield after.encode()


def load_verified_marker(path: str | os.PathLike[str]) -> VerifiedMarker:
    """Parse a marker (FormatError if it is missing or not a rentcheck/pull-verified/v1).

    Streamed like a manifest, its files into a roster in columns: a marker of a million files
    (about 170 MB of JSON) loads in the roster's memory, not as a million dicts."""
    shown = os.fspath(path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_MANIFEST_BYTES:
                raise FormatError(f"{shown!r} is more than {MAX_MANIFEST_BYTES} bytes")
            top, files, leftovers, _ = read_roster_document(f, "marker")
    except OSError as exc:
        raise FormatError(
            f"cannot read {shown!r}: {exc.strerror}", "run `rentcheck verify` first"
        ) from None
    except FormatError as exc:
        raise FormatError(
            f"cannot read {shown!r}: {exc.message}", "run `rentcheck verify` first"
        ) from None
    if top.get("schema") != VERIFIED_SCHEMA:
        raise FormatError(f"{shown!r} is not a {VERIFIED_SCHEMA} marker")
    fields = [top.get(k) for k in ("run_id", "manifest_sha256", "verified_at")]
    if leftovers or not all(isinstance(v, str) for v in fields) or "files" not in top:
        raise FormatError(f"{shown!r} is damaged: it lacks run_id, manifest_sha256, files ...")
    run_id, manifest_sha256, verified_at = (str(v) for v in fields)
    return VerifiedMarker(run_id, manifest_sha256, verified_at, files, top)


def marker_drift(local_root: str | os.PathLike[str], marker: VerifiedMarker) -> list[Finding]:
    """RC521 for every file that is gone or whose size/mtime changed since verification.

    Cheap (one ``lstat`` per file), for the teardown gate. It does not look for new files.
    """
    rule = RULES_BY_CODE[VERIFIED_MARKER_STALE]
    out = []
    for f in marker.files:
        try:
            st = os.lstat(os.path.join(os.fspath(local_root), f.path))
            changed = (st.st_size, st.st_mtime_ns) != (f.size, f.mtime_ns)
            why = "changed since it was verified" if changed else ""
        except OSError:
            why = "gone since it was verified"
        if why:
            out.append(rule.finding(why, path=f.path))
    return out

"""Load and validate PULL_MANIFEST.json. The input is treated as hostile.

Path rules (the same on every platform):

* a path is the file's POSIX path relative to the root, exactly as the builder saw it: no leading
  ``/`` or drive letter, no backslash, NUL or control character, no empty, ``.`` or ``..``
  component, at most 4096 characters and 255 UTF-8 bytes per component;
* paths are compared after Unicode NFC normalisation (macOS may store names decomposed), so two
  entries equal after NFC are duplicates and the manifest is rejected; case is significant;
* a path that is also a directory of another entry (``a`` and ``a/b``) is rejected;
* ``PULL_MANIFEST.json`` and ``PULL_VERIFIED.json`` at the top level are reserved.

The JSON itself is parsed with a hook that validates every object as soon as it is complete and
rejects any shape the schema does not have, and the raw text is pre-screened so that nested or
scalar-filled arrays are refused before they are built: memory stays proportional to the real
roster, whatever the file contains.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rentcheck.errors import FormatError, UsageError
from rentcheck.model import Finding
from rentcheck.pull import manifest_builder as builder
from rentcheck.pull.rules import MANIFEST_INVALID, RULES_BY_CODE

__all__ = [
    "MAX_MANIFEST_BYTES",
    "SCHEMA",
    "Leftover",
    "Manifest",
    "ManifestEntry",
    "build_manifest_file",
    "check_manifest",
    "load_manifest",
    "normalize_path",
    "parse_manifest",
    "validate_rel_path",
]

SCHEMA = builder.SCHEMA
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
_HEX64 = re.compile(r"\A[0-9a-fA-F]{64}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
_BAD_ARRAY = re.compile(rb"\[\s*[^\s{\]]|,\s*[^\s{\"]")
_FILE_KEYS = frozenset({"path", "size", "mtime_ns", "sha256", "blake3"})
_LEFT_KEYS = frozenset({"path", "size", "reason"})
_TOTAL_KEYS = frozenset({"files", "bytes"})
_TOP_KEYS = frozenset(
    {"schema", "run_id", "created_at", "host", "tool", "files", "leftovers", "totals"}
)
_REQUIRED_TOP = ("schema", "run_id", "created_at", "host", "files")


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    blake3: str | None = None


@dataclass(frozen=True)
class Leftover:
    path: str
    size: int
    reason: str


@dataclass(frozen=True)
class _Totals:
    files: int
    bytes: int


@dataclass(frozen=True)
class Manifest:
    run_id: str
    created_at: datetime.datetime
    host: str
    files: tuple[ManifestEntry, ...]
    leftovers: tuple[Leftover, ...]
    sha256: str  # of the manifest's bytes, for PULL_VERIFIED.json
    tool: str | None = None
    schema: str = SCHEMA

    def by_path(self) -> dict[str, ManifestEntry]:
        """Entries keyed by NFC-normalised path."""
        return {normalize_path(e.path): e for e in self.files}

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.files)


def normalize_path(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def validate_rel_path(path: object, what: str = "path") -> str:
    """``path`` if it is a safe relative POSIX path, else FormatError naming the problem."""
    if not isinstance(path, str) or not path:
        raise FormatError(f"{what}: must be a non-empty string")
    shown = path if len(path) <= 200 else path[:200] + "..."
    if len(path) > 4096:
        raise FormatError(f"{what} {shown!r}: longer than 4096 characters")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FormatError(f"{what} {shown!r}: not valid UTF-8 (lone surrogate)") from None
    if _CONTROL.search(path):
        raise FormatError(f"{what} {shown!r}: contains a backslash or control character")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        raise FormatError(f"{what} {shown!r}: absolute paths are not allowed")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            name = {"": "empty", ".": "'.'", "..": "'..'"}[part]
            raise FormatError(f"{what} {shown!r}: {name} component not allowed")
        if len(part.encode("utf-8")) > 255:
            raise FormatError(f"{what} {shown!r}: a component is longer than 255 bytes")
    if path in builder.RESERVED_NAMES:
        raise FormatError(f"{what} {shown!r}: reserved name")
    return path


def _int(value: object, what: str, *, signed: bool = False) -> int:
    if type(value) is not int or (value < 0 and not signed):  # bool is not an int here
        kind = "an integer" if signed else "a non-negative integer"
        raise FormatError(f"{what}: {value!r} is not {kind}")
    return value


def _digest(value: object, what: str) -> str:
    if not isinstance(value, str) or not _HEX64.match(value):
        raise FormatError(f"{what}: must be 64 hexadecimal characters")
    return value.lower()


class _Hook:
    """``object_pairs_hook``: validate each JSON object as soon as it is parsed.

    Returns compact typed values and refuses every shape the schema does not have (including a
    second top-level-like object), so nothing cheap to write can be expensive to hold.
    """

    def __init__(self) -> None:
        self.tops = 0

    def __call__(self, pairs: list[tuple[str, Any]]) -> object:
        keys = [k for k, _ in pairs]
        if not keys:
            raise FormatError("empty object where the schema has none")
        if len(set(keys)) != len(keys):
            raise FormatError(f"duplicate key in object with keys {sorted(set(keys))[:8]}")
        obj = dict(pairs)
        if "path" in obj and set(keys) <= _FILE_KEYS and "sha256" in obj:
            return _file_entry(obj)
        if set(keys) == _LEFT_KEYS:
            path = validate_rel_path(obj["path"], "leftover")
            if not isinstance(obj["reason"], str):
                raise FormatError(f"leftover {path!r}: reason must be a string")
            return Leftover(path, _int(obj["size"], f"leftover {path!r}: size"), obj["reason"])
        if set(keys) == _TOTAL_KEYS:
            return _Totals(_int(obj["files"], "totals.files"), _int(obj["bytes"], "totals.bytes"))
        if set(keys) <= _TOP_KEYS:
            self.tops += 1
            if self.tops > 1:
                raise FormatError("more than one top-level object")
            return obj
        unknown = sorted(set(keys) - _TOP_KEYS - _FILE_KEYS - _LEFT_KEYS)
        raise FormatError(f"unexpected object with keys {unknown[:8] or sorted(keys)[:8]}")


def _file_entry(obj: dict[str, Any]) -> ManifestEntry:
    path = validate_rel_path(obj["path"], "file")
    missing = _FILE_KEYS - {"blake3"} - set(obj)
    if missing:
        raise FormatError(f"file {path!r}: missing {sorted(missing)}")
    b3 = obj.get("blake3")
    return ManifestEntry(
        path,
        _int(obj["size"], f"file {path!r}: size"),
        _int(obj["mtime_ns"], f"file {path!r}: mtime_ns", signed=True),
        _digest(obj["sha256"], f"file {path!r}: sha256"),
        None if b3 is None else _digest(b3, f"file {path!r}: blake3"),
    )


def _prescreen(data: bytes) -> None:
    skeleton = _STRING.sub(b'""', data)
    if _BAD_ARRAY.search(skeleton):
        raise FormatError("arrays may only hold objects (files, leftovers)")
    depth = 0
    for c in skeleton.translate(None, bytes(b for b in range(256) if b not in b"{}[]")):
        depth += 1 if c in b"{[" else -1
        if depth > 3:
            raise FormatError("objects are nested deeper than the schema allows")


def _created(value: object) -> datetime.datetime:
    if not isinstance(value, str):
        raise FormatError("created_at: must be an ISO-8601 string")
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FormatError(f"created_at: {value[:64]!r} is not an ISO-8601 time") from None


def _typed_list(value: object, kind: type, what: str) -> list[Any]:
    if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
        raise FormatError(f"{what}: must be a list of {what} entries")
    return value


def parse_manifest(data: bytes) -> Manifest:
    """Validate raw manifest bytes. Raises FormatError with the first problem found."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise FormatError(f"manifest is {len(data)} bytes, more than {MAX_MANIFEST_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"manifest is not UTF-8 (byte {exc.start})") from None
    _prescreen(data)
    try:
        top = json.loads(text, object_pairs_hook=_Hook())
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"manifest is not valid JSON: {exc}") from None
    if not isinstance(top, dict):
        raise FormatError("manifest must be a JSON object with schema, run_id, files, ...")
    missing = [k for k in _REQUIRED_TOP if k not in top]
    if missing:
        raise FormatError(f"manifest lacks {missing}")
    if top["schema"] != SCHEMA:
        raise FormatError(f"schema is {str(top['schema'])[:80]!r}, expected {SCHEMA!r}")
    run_id, host, tool = top["run_id"], top["host"], top.get("tool")
    if not isinstance(run_id, str) or not builder._RUN_ID.match(run_id):
        raise FormatError("run_id: must be 1-200 characters without spaces, slashes or controls")
    if (
        not isinstance(host, str)
        or len(host) > 255
        or (tool is not None and not isinstance(tool, str))
    ):
        raise FormatError("host and tool must be strings")
    files = _typed_list(top["files"], ManifestEntry, "files")
    leftovers = _typed_list(top.get("leftovers", []), Leftover, "leftovers")
    _check_roster([e.path for e in files] + [e.path for e in leftovers])
    totals = top.get("totals")
    if totals is not None:
        want = _Totals(len(files), sum(e.size for e in files))
        if totals != want:
            raise FormatError(f"totals {totals} do not match the files ({want})")
    return Manifest(
        run_id,
        _created(top["created_at"]),
        host,
        tuple(files),
        tuple(leftovers),
        hashlib.sha256(data).hexdigest(),
        tool,
    )


def _check_roster(paths: list[str]) -> None:
    seen: set[str] = set()
    for path in paths:
        key = normalize_path(path)
        if key in seen:
            raise FormatError(f"path {path!r} is listed twice (after NFC normalisation)")
        seen.add(key)
    for key in seen:
        head, _, _ = key.rpartition("/")
        while head:
            if head in seen:
                raise FormatError(f"path {head!r} is both a file and a directory")
            head, _, _ = head.rpartition("/")


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a manifest file (FormatError if missing, too big or invalid)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise FormatError(
            f"cannot read manifest {os.fspath(path)!r}: {exc.strerror}",
            "build it on the box with `rentcheck manifest build`",
        ) from None
    try:
        return parse_manifest(data)
    except FormatError as exc:
        raise FormatError(f"{os.fspath(path)}: {exc.message}", exc.hint) from None


def check_manifest(path: str | os.PathLike[str]) -> tuple[Manifest | None, list[Finding]]:
    """``rentcheck manifest check``: the manifest, or None and one RC501 finding."""
    try:
        return load_manifest(path), []
    except FormatError as exc:
        rule = RULES_BY_CODE[MANIFEST_INVALID]
        return None, [
            Finding(MANIFEST_INVALID, rule.default_severity, exc.message, path=os.fspath(path))
        ]


def build_manifest_file(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
) -> tuple[Path, Mapping[str, Any]]:
    """``rentcheck manifest build`` run locally: the code the box runs; errors as UsageError."""
    out = Path(output) if output is not None else Path(root) / builder.MANIFEST_NAME
    try:
        builder.check_output(os.fspath(root), os.fspath(out))
        manifest = builder.write_manifest(
            os.fspath(root), os.fspath(out), run_id, jobs, with_blake3
        )
    except builder.BuildError as exc:
        raise UsageError(exc.message, exc.hint) from None
    except OSError as exc:
        raise UsageError(f"cannot build the manifest: {exc}", "check ROOT and -o") from None
    return out, manifest

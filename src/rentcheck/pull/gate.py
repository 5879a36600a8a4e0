"""The verify gate as the CLI and the pytest plugin run it: settings applied, verdicts as data."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from rentcheck import record
from rentcheck.model import Finding, Severity
from rentcheck.pull.filecheck import FileVerdict
from rentcheck.pull.manifest import Roster
from rentcheck.pull.settings import VerifySettings
from rentcheck.pull.verdicts import Row, Verdicts, rows_of
from rentcheck.pull.verify import Progress, VerifyResult, verify_pull

__all__ = ["blocking", "file_verdicts", "run_verify", "verify_summary"]


def run_verify(
    local_root: str | os.PathLike[str],
    settings: VerifySettings,
    *,
    manifest: str | os.PathLike[str] | None = None,
    expected_run_id: str | None = None,
    progress: Progress | None = None,
) -> VerifyResult:
    """``verify_pull`` with the settings; advisory findings are turned into warnings."""
    result = verify_pull(
        local_root,
        manifest,
        jobs=settings.jobs,
        deep=settings.deep,
        expected_run_id=expected_run_id,
        extra_allowed_globals=settings.allow_globals,
        max_header=settings.max_header_bytes,
        progress=progress,
        policy=settings.verify_policy(),
    )
    advisory = settings.advisory
    if not advisory:
        return result
    findings = tuple(
        record.replace(f, severity=Severity.WARNING) if f.code in advisory else f
        for f in result.findings
    )
    return record.replace(result, findings=findings)


def blocking(
    findings: Iterable[Finding], fail_level: Severity, advisory: Iterable[str] = ()
) -> list[Finding]:
    """The findings that fail the gate: at or above ``fail_level`` and not advisory."""
    allowed = frozenset(advisory)
    return [f for f in findings if f.severity >= fail_level and f.code not in allowed]


def _brief(f: Finding) -> dict[str, Any]:
    return {"code": f.code, "severity": f.severity.label, "message": f.message}


def file_verdicts(
    result: VerifyResult,
    fail_level: Severity,
    advisory: Iterable[str] = (),
    *,
    ok_limit: int | None = None,
) -> list[dict[str, Any]]:
    """Every file read, every manifest file that was not, and every other path a finding
    names (unexpected files, links leaving the root ...), each with its findings and verdict:
    ``ok`` (nothing), ``warning`` (findings that do not block), ``failed``, or ``missing``
    (listed in the manifest, not pulled). With ``ok_limit``, only that many ``ok`` rows (the
    first in path order) are listed; every other row still is.
    """
    allowed = frozenset(advisory)
    by_path: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_path.setdefault(f.path or "", []).append(f)

    def verdict(found: Sequence[Finding]) -> str:
        if blocking(found, fail_level, allowed):
            return "failed"
        return "warning" if found else "ok"

    out: list[dict[str, Any]] = []
    for path, size, _, sha256, kind, tensors, _ in _listed_rows(result.files, by_path, ok_limit):
        found = by_path.get(path)
        out.append(
            {
                "path": path,
                "verdict": verdict(found) if found else "ok",
                "kind": kind,
                "size": size,
                "sha256": sha256,
                "tensors": tensors,
                "findings": [_brief(f) for f in found] if found else [],
            }
        )
    if result.manifest is not None:
        files = result.manifest.files
        for i in _unread(result.files, files):
            entry = files[i]
            found = by_path.get(entry.path, [])
            out.append(
                {
                    "path": entry.path,
                    "verdict": "missing",
                    "kind": None,
                    "size": entry.size,
                    "sha256": None,
                    "tensors": 0,
                    "findings": [_brief(f) for f in found],
                }
            )
    listed = {str(e["path"]) for e in out if e["path"] in by_path}
    for path, found in by_path.items():  # unexpected, escaping or special entries: never read
        if path and path not in listed:
            out.append(
                {
                    "path": path,
                    "verdict": verdict(found),
                    "kind": None,
                    "size": None,
                    "sha256": None,
                    "tensors": 0,
                    "findings": [_brief(f) for f in found],
                }
            )
    return sorted(out, key=lambda e: str(e["path"]))


def _listed_rows(
    files: Sequence[FileVerdict], by_path: Mapping[str, object], ok_limit: int | None
) -> Iterator[Row]:
    """The rows to list: every file with findings, and the first ``ok_limit`` without (all of
    them when None), in path order; a million-file verify makes a thousand rows, not all."""
    oks, named = 0, set()
    rows = rows_of(files)
    for row in rows:
        if row[0] in by_path:
            named.add(row[0])
        else:
            oks += 1
            if ok_limit is not None and oks > ok_limit:
                break
        yield row
    else:
        return
    if not isinstance(files, Verdicts):
        yield from (row for row in rows if row[0] in by_path)
        return
    yield from files.rows_named(set(by_path) - named)


def _unread(files: Sequence[FileVerdict], roster: Roster) -> Iterator[int]:
    """Roster positions that no file read was matched to."""
    if isinstance(files, Verdicts):
        return files.unread_listed()
    read = {v.path for v in files}
    return (i for i, path in enumerate(roster.paths) if path not in read)


def verify_summary(result: VerifyResult) -> dict[str, Any]:
    """The manifest the pull was judged against, for reports."""
    m = result.manifest
    if m is None:
        return {"manifest": None}
    return {
        "manifest": {
            "run_id": m.run_id,
            "sha256": m.sha256,
            "host": m.host,
            "created_at": m.created_at.isoformat(),
            "files": len(m.files),
            "bytes": m.total_bytes,
            "leftovers": len(m.leftovers),
        }
    }

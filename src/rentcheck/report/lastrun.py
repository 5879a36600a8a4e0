"""The last JSON report of each gate, kept beside the ledger for ``rentcheck report``.

``.rentcheck/last/<gate>.json`` holds the ``--output-format json`` document of the gate's
most recent recorded run, whatever format was printed (compact JSON, written atomically; one
file per gate, replaced by the next run). The ledger says *that* a gate passed; this file
keeps *what it measured* (the audit's mounts, the verify table, the findings).
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from rentcheck.report import Report

__all__ = ["LAST_DIR", "last_reports", "save_last_report"]

LAST_DIR = os.path.join(".rentcheck", "last")
_GATE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
MAX_REPORT_BYTES = 64 * 1024 * 1024  # a bigger file is not one of ours: skipped when read


def save_last_report(root: str, gate: str, report: Report) -> str | None:
    """Keep ``report`` as the gate's last JSON document; None (and a warning) on failure."""
    import sys

    from rentcheck.atomic import write_atomic
    from rentcheck.report.json_format import report_to_dict

    if not _GATE_NAME.match(gate):
        return None
    path = os.path.join(root, LAST_DIR, f"{gate}.json")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # compact: with no indent json uses its C encoder (the indenting one is pure Python,
        # 40 ms for a verify's thousand rows); only `rentcheck report` reads this file
        text = json.dumps(report_to_dict(report), default=str, separators=(",", ":"))
        write_atomic(path, text.encode("utf-8") + b"\n")
    except OSError as exc:
        sys.stderr.write(f"rentcheck: warning: the last report was not kept: {exc}\n")
        return None
    return path


def last_reports(root: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each gate's kept report (gate -> document) and one line per file that was unreadable."""
    folder = os.path.join(root, LAST_DIR)
    found: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return found, problems
    for name in names:
        gate, ext = os.path.splitext(name)
        if ext != ".json" or not _GATE_NAME.match(gate):
            continue
        document = read_report(os.path.join(folder, name), problems)
        if document is not None:
            found[gate] = document
    return found, problems


def read_report(path: str, problems: list[str]) -> dict[str, Any] | None:
    """A rentcheck JSON report from ``path``, or None with the reason added to ``problems``."""
    try:
        if os.path.getsize(path) > MAX_REPORT_BYTES:
            problems.append(f"{path}: skipped, larger than {MAX_REPORT_BYTES} bytes")
            return None
        with open(path, "rb") as handle:
            document = json.loads(handle.read())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{path}: skipped, not readable JSON ({exc})")
        return None
    if not isinstance(document, dict) or document.get("schema") != "rentcheck/report/v1":
        problems.append(f"{path}: skipped, not a rentcheck/report/v1 document")
        return None
    checked: dict[str, Any] = document
    return checked

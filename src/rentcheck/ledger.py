"""The gate ledger: ``.rentcheck/ledger.jsonl`` in the project, append-only evidence.

One JSON object per line, one line per gate result. An append is one ``write`` of the whole
line to a descriptor opened with ``O_APPEND`` (the kernel places each such write at the end
as a unit, so concurrent writers never interleave bytes on a local filesystem), followed by
``fsync``. Reading never rewrites: a torn or corrupt line (a writer killed mid-append, a
hand edit) is reported with its line number and skipped; every complete line still counts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "LEDGER_NAME",
    "LEDGER_SCHEMA",
    "LedgerRead",
    "append_entry",
    "ledger_path",
    "read_ledger",
]

LEDGER_NAME = os.path.join(".rentcheck", "ledger.jsonl")
LEDGER_SCHEMA = "rentcheck/ledger/v1"
# A line longer than this is not ours (entries are a few hundred bytes): refuse to write it,
# skip it when read, so one bad line cannot make every later read slow.
MAX_LINE = 256 * 1024


def ledger_path(root: str) -> str:
    return os.path.join(root, LEDGER_NAME)


def append_entry(root: str, entry: Mapping[str, Any]) -> str:
    """Append ``entry`` as one line, durably; returns the ledger's path."""
    line = json.dumps(dict(entry), sort_keys=True, separators=(",", ":"), default=str)
    data = (line + "\n").encode("utf-8")
    if len(data) > MAX_LINE:
        raise ValueError(f"ledger entry of {len(data)} bytes is over the {MAX_LINE} limit")
    path = ledger_path(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        # A torn line left by a killed writer has no newline: start ours on a line of its
        # own, in the same write, so the torn one stays one corrupt line and ours is whole.
        if _ends_torn(fd):
            data = b"\n" + data
        written = os.write(fd, data)
        if written != len(data):  # a full disk: say so rather than leave a short line
            raise OSError(f"short write to {path} ({written} of {len(data)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    return os.pread(fd, 1, size - 1) != b"\n"


class LedgerRead:
    """What a read of the ledger found: the entries in order, and the lines it skipped."""

    __slots__ = ("entries", "path", "problems")

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        self.problems: list[str] = []


def read_ledger(root: str) -> LedgerRead:
    """Every complete, well-formed line of the project's ledger (an absent ledger is empty)."""
    path = ledger_path(root)
    found = LedgerRead(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; absent is the common case
    except FileNotFoundError:
        return found
    with handle:
        for number, raw in enumerate(_lines(handle), start=1):
            entry = _parse(raw)
            if entry is None:
                torn = not raw.endswith(b"\n")
                kind = "torn (no newline: a writer was cut off)" if torn else "not a ledger entry"
                found.problems.append(f"{path}:{number}: skipped a {kind}")
            else:
                found.entries.append(entry)
    return found


def _lines(handle: Any) -> Iterator[bytes]:
    for raw in handle:
        if raw.strip():
            yield raw


def _parse(raw: bytes) -> dict[str, Any] | None:
    if len(raw) > MAX_LINE or not raw.endswith(b"\n"):
        return None
    try:
        entry = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("schema") != LEDGER_SCHEMA:
        return None
    if not isinstance(entry.get("gate"), str) or entry.get("verdict") not in VERDICTS:
        return None
    checked: dict[str, Any] = entry
    return checked


VERDICTS = ("pass", "fail", "forced", "ready")

"""Findings of content-only checks, cached by file content and rule-set identity, so a
pre-commit run over unchanged files does not parse them again.

The cache is one JSON file per rule selection under ``<project>/.rentcheck/cache/`` (never
pickle: it is data read back on every run), so hooks that select different rules (the shell
and the Python pre-commit hooks) do not evict each other's answers. Files are written
atomically, bounded in size and number, and safe to delete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence

from rentcheck import __version__
from rentcheck.atomic import write_atomic
from rentcheck.model import Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FindingsCache"]

SCHEMA = 1
MAX_ENTRIES = 20_000
MAX_FILES = 8  # selections kept; the least recently written go first
# The files pruning may delete: one per selection, and the single file of rentcheck <= 0.1.
_OWN_FILE = re.compile(r"^lint(-[0-9a-f]{16})?\.json$")


class FindingsCache:
    def __init__(self, root: str | None, codes: Sequence[str]) -> None:
        # Any change of rentcheck or of the selected rules makes every old entry unreachable.
        identity = f"{SCHEMA}:{__version__}:{','.join(sorted(codes))}"
        self.salt = hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.directory = os.path.join(root, ".rentcheck", "cache") if root else None
        self.path = (
            os.path.join(self.directory, f"lint-{self.salt}.json") if self.directory else None
        )
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.added: dict[str, list[dict[str, Any]]] = {}
        self.recent: dict[str, list[dict[str, Any]]] = {}
        self._load()

    @property
    def enabled(self) -> bool:
        """False for --no-cache: nothing is read or written."""
        return self.path is not None

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                doc = json.load(handle)
        except (OSError, ValueError):
            return  # missing or damaged: start empty, the next save replaces it
        if isinstance(doc, dict) and doc.get("salt") == self.salt:
            entries = doc.get("entries")
            if isinstance(entries, dict):
                self.entries = entries

    def key(self, data: bytes, kind: str) -> str:
        digest = hashlib.sha256(kind.encode())
        digest.update(b"\0")
        digest.update(data)  # no concatenated copy of the file's bytes
        return digest.hexdigest()

    def get(self, key: str, path: str) -> list[Finding] | None:
        stored = self.entries.get(key)
        if stored is None:
            return None
        try:
            return [_finding(item, path) for item in stored]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, findings: Iterable[Finding]) -> None:
        stored = [_stored(f) for f in findings]
        self.added[key] = stored
        self.recent[key] = stored

    def take_recent(self) -> dict[str, list[dict[str, Any]]]:
        """Entries put since the last call (what a worker process sends back)."""
        recent, self.recent = self.recent, {}
        return recent

    def merge(self, added: dict[str, list[dict[str, Any]]]) -> None:
        self.added.update(added)

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        entries = {**self.entries, **self.added}
        if len(entries) > MAX_ENTRIES:  # keep the newest ones: dicts keep insertion order
            entries = dict(list(entries.items())[-MAX_ENTRIES:])
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            ignore = os.path.join(os.path.dirname(os.path.dirname(self.path)), ".gitignore")
            if not os.path.exists(ignore):
                write_atomic(ignore, b"# rentcheck's own cache and records\n*\n")
            blob = json.dumps({"salt": self.salt, "entries": entries}, separators=(",", ":"))
            write_atomic(self.path, blob.encode())
            self._prune()
        except OSError:
            pass  # a read-only checkout still gets its findings, just not cached

    def _prune(self) -> None:
        """Keep the MAX_FILES most recently written selections (old rentcheck versions and
        one-off --select runs leave files nobody will read again)."""
        if self.directory is None:
            return
        names = [n for n in os.listdir(self.directory) if _OWN_FILE.match(n)]
        if len(names) <= MAX_FILES:
            return
        paths = [os.path.join(self.directory, n) for n in names]
        paths.sort(key=lambda p: os.stat(p).st_mtime_ns, reverse=True)
        for stale in paths[MAX_FILES:]:
            with contextlib.suppress(OSError):
                os.unlink(stale)


def _stored(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "severity": finding.severity.label,
        "message": finding.message,
        "line": finding.line,
        "col": finding.col,
        "end_line": finding.end_line,
        "end_col": finding.end_col,
        "details": dict(finding.details),
    }


def _finding(item: dict[str, Any], path: str) -> Finding:
    # A cached finding read back as it was stored (not built from its rule: a plugin's rule
    # may have changed its default since), so Finding's own constructor.
    return Finding(
        code=str(item["code"]),
        severity=Severity.parse(str(item["severity"])),
        message=str(item["message"]),
        path=path,
        line=item.get("line"),
        col=item.get("col"),
        end_line=item.get("end_line"),
        end_col=item.get("end_col"),
        details=item.get("details") or {},
    )

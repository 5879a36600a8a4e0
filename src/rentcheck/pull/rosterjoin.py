"""Match the pulled tree against the manifest's roster as both stream: no dict of every path.

The walk yields rel paths in sorted order and the builder writes the roster sorted, so a cursor
into the roster finds almost every file at the next position (a merge-join); anything else is
looked up by bisection (``Roster.find``). One byte per roster entry records that it was claimed;
what is left unclaimed at the end was not pulled. What is held besides is bounded by the
findings: names in no roster, paths the walk refused, and the rare local names that are not
in NFC (matched after the walk, so that an NFC spelling on disk claims its entry first).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Sequence

from rentcheck.model import Finding
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.filecheck import Expected, to_finding
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.manifest import Manifest, normalize_path
from rentcheck.pull.rules import (
    EMPTY_PULL,
    LEFTOVER_PARTIAL,
    MISSING_FILE,
    RUN_ID_MISMATCH,
    UNEXPECTED_FILE,
)
from rentcheck.pull.walk import Found, LocalFile, iter_tree

__all__ = ["RosterJoin"]


class RosterJoin:
    """Roster-level findings for one verification, and each local file's roster position."""

    def __init__(self, manifest: Manifest | None, expected_run_id: str | None) -> None:
        self.findings: list[Finding] = []
        self._manifest = manifest
        self._problems: set[str] = set()  # paths the walk refused: not also "missing"
        self._elsewhere: dict[str, str] = {}  # NFC key -> local name, for names in no roster
        self._cursor = 0
        self._claimed = bytearray(0 if manifest is None else len(manifest.files))
        self._left_keys: set[str] = set()
        self._paths: Sequence[str] = () if manifest is None else manifest.files.paths
        if manifest is not None:
            self._manifest_findings(manifest, expected_run_id)

    def _add(self, code: str, message: str, path: str | None) -> None:
        self.findings.append(to_finding(Issue(code, message), path))

    def _manifest_findings(self, manifest: Manifest, run_id: str | None) -> None:
        name = builder.MANIFEST_NAME
        if run_id is not None and manifest.run_id != run_id:
            msg = f"manifest is for run {manifest.run_id!r}, expected {run_id!r}"
            self._add(RUN_ID_MISMATCH, msg, name)
        if not manifest.files:
            self._add(EMPTY_PULL, "the manifest lists no files", name)
        for left in manifest.leftovers:
            msg = f"left over on the box ({left.reason}, {left.size} bytes); not hashed, not pulled"
            self._add(LEFTOVER_PARTIAL, msg, left.path)
            self._left_keys.add(normalize_path(left.path))

    def expected(self, at: int | None) -> Expected | None:
        """The size and raw digest of roster entry ``at`` (no entry object is made)."""
        if at is None or self._manifest is None:
            return None
        files = self._manifest.files
        return Expected(files.sizes[at], files.sha256_column[32 * at : 32 * at + 32])

    def expected_work(self, root: str) -> tuple[int, int]:
        """(files, bytes) to read: the manifest's, or without one, a walk's count."""
        if self._manifest is not None:
            return len(self._manifest.files), self._manifest.total_bytes
        files = nbytes = 0
        for item in iter_tree(root):
            if isinstance(item, LocalFile):
                files, nbytes = files + 1, nbytes + item.size
        return files, nbytes

    def stream(self, walk: Iterable[Found]) -> Iterator[tuple[LocalFile, int | None]]:
        """The files to read, each with its roster position (None: in no roster), as the walk
        yields them; then the files whose local name is not NFC; findings go to ``findings``."""
        later: list[LocalFile] = []
        for item in walk:
            if not isinstance(item, LocalFile):
                rel, issue = item
                self.findings.append(to_finding(issue, rel))
                self._problems.add(rel)
            elif self._manifest is None:
                reason = builder.leftover_reason(item.rel)
                if reason:
                    self._add(LEFTOVER_PARTIAL, f"leftover: {reason}", item.rel)
                yield item, None
            elif item.rel.isascii() or unicodedata.is_normalized("NFC", item.rel):
                at = self._next(item.rel)
                if at is not None:
                    yield item, at
                else:
                    self._stray(item.rel, item.rel)
            else:
                later.append(item)
        for lf in sorted(later, key=lambda lf: lf.rel):
            key = normalize_path(lf.rel)
            at = self._find(key)
            first = self._elsewhere.get(key)
            if first is None and at is not None and self._claimed[at]:
                first = key  # claimed by its NFC spelling, the roster's own name
            if first is not None:  # two local names that are one name after NFC: check both
                msg = f"same name as {first!r} after Unicode (NFC) normalisation"
                self._add(UNEXPECTED_FILE, msg, lf.rel)
                yield lf, None
            elif at is not None:
                self._claimed[at] = 1
                self._elsewhere[key] = lf.rel
                yield lf, at
            else:
                self._stray(key, lf.rel)
        self._missing()

    def _find(self, key: str) -> int | None:
        return None if self._manifest is None else self._manifest.files.find(key)

    def _next(self, key: str) -> int | None:
        """Claim the entry named ``key``: at the cursor (the merge-join) or by bisection."""
        paths, at = self._paths, self._cursor
        if not (at < len(paths) and paths[at] == key):
            found = self._find(key)
            if found is None:
                return None
            at = found
        self._cursor = at + 1
        self._claimed[at] = 1
        return at

    def _stray(self, key: str, rel: str) -> None:
        """A local file in no roster: a leftover the manifest recorded, or unexpected."""
        self._elsewhere[key] = rel
        if key in self._left_keys:
            return
        reason = builder.leftover_reason(rel)
        if reason:
            self._add(LEFTOVER_PARTIAL, f"leftover: {reason}", rel)
        else:
            self._add(UNEXPECTED_FILE, "not listed in the manifest", rel)

    def _missing(self) -> None:
        if self._manifest is None:
            return
        files, claimed, problems = self._manifest.files, self._claimed, self._problems
        at = claimed.find(0)
        while at >= 0:
            path = files.paths[at]
            if path not in problems and normalize_path(path) not in problems:
                size = files.sizes[at]
                msg = f"listed in the manifest ({size} bytes) but not pulled"
                self._add(MISSING_FILE, msg, path)
            at = claimed.find(0, at + 1)

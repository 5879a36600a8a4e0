"""Every file's verdict of one verification, held in columns: bytes per file, not objects.

A verification of 1,000,000 files keeps one verdict per file (for the marker and the report).
As ``FileVerdict`` objects with their hex digests that is about 300 bytes a file on top of the
roster; here a file that matched its manifest entry (size, digest, name, no error) costs 14
bytes beside the roster it was matched against, and any other file about 70 bytes plus its
path. ``FileVerdict`` objects are made on access, in path order.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, overload

from rentcheck.pull.filecheck import FileVerdict
from rentcheck.pull.manifest import Roster, normalize_path

__all__ = ["FileTable", "Row", "Tally", "Verdicts", "rows_of", "tally"]

_UNREAD, _AS_LISTED, _OTHER = 0, 1, 2  # Verdicts' per-entry state
#: (path, size, mtime_ns, sha256, kind, tensors, errors): a FileVerdict's fields, in order
Row = tuple[str, int, int, "str | None", str, int, int]
_AS_LISTED_MASK = bytes(1 if k == _AS_LISTED else 0 for k in range(256))


def _as_row(v: FileVerdict) -> Row:
    return v.path, v.size, v.mtime_ns, v.sha256, v.kind, v.tensors, v.errors


def rows_of(files: Sequence[FileVerdict]) -> Iterator[Row]:
    """The verdicts as rows, in their order (``Verdicts.rows`` makes no FileVerdict)."""
    if isinstance(files, Verdicts):
        return files.rows()
    return (_as_row(v) for v in files)


class Tally(NamedTuple):
    """What a verification read, added up: bytes, files per kind, tensors."""

    nbytes: int
    kinds: Counter[str]
    tensors: int


def tally(files: Sequence[FileVerdict]) -> Tally:
    """The verdicts added up (``Verdicts.tally`` reads its columns and makes no row)."""
    if isinstance(files, Verdicts):
        return files.tally()
    return Tally(
        sum(v.size for v in files), Counter(v.kind for v in files), sum(v.tensors for v in files)
    )


def _path(row: Row) -> str:
    return row[0]


class _Kinds:
    """File kinds ("safetensors", "data", ...) as one byte each."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.known: dict[str, int] = {}

    def code(self, kind: str) -> int:
        """The kind's byte, given it a new one if it has none (callers hold a lock)."""
        code = self.known.get(kind)
        if code is None:
            if len(self.names) == 255:
                raise ValueError("more than 255 file kinds")  # pragma: no cover - a dozen exist
            self.names.append(kind)
            code = self.known[kind] = len(self.names) - 1
        return code


class FileTable:
    """Verdicts of files in no roster (unexpected, or no manifest), appended in any order."""

    def __init__(self, kinds: _Kinds) -> None:
        self._kinds = kinds
        self._paths: list[str] = []
        self._size = array("q")
        self._mtime = array("q")
        self._tensors = array("q")
        self._errors = array("q")
        self._sha = bytearray()  # 32 zero bytes where _has_sha is 0
        self._has_sha = bytearray()
        self._kind = bytearray()

    def __len__(self) -> int:
        return len(self._paths)

    def append(self, v: FileVerdict) -> None:
        self._paths.append(v.path)
        self._size.append(v.size)
        self._mtime.append(v.mtime_ns)
        self._tensors.append(v.tensors)
        self._errors.append(v.errors)
        self._sha += bytes(32) if v.sha256 is None else bytes.fromhex(v.sha256)
        self._has_sha.append(v.sha256 is not None)
        self._kind.append(self._kinds.code(v.kind))

    @property
    def sizes(self) -> Sequence[int]:
        return self._size

    def row(self, i: int) -> Row:
        sha = self._sha[32 * i : 32 * i + 32].hex() if self._has_sha[i] else None
        kind = self._kinds.names[self._kind[i]]
        return (
            self._paths[i], self._size[i], self._mtime[i], sha, kind, self._tensors[i],
            self._errors[i],
        )  # fmt: skip

    def sorted_rows(self) -> Iterator[Row]:
        paths = self._paths
        return (self.row(i) for i in sorted(range(len(paths)), key=paths.__getitem__))


class Verdicts(Sequence[FileVerdict]):
    """The verdicts of one verification, in path order. ``record`` is safe from any thread.

    A file matched to roster entry ``at`` is kept in that entry's columns when its verdict is
    what the manifest says (same name, size and digest, no error); any other verdict of a
    listed file, and every file in no roster, goes to a ``FileTable``.
    """

    def __init__(self, roster: Roster | None) -> None:
        n = 0 if roster is None else len(roster)
        self._roster = roster
        self._kinds = _Kinds()
        self._state = bytearray(n)
        self._mtime = array("q", bytes(8 * n))
        self._tensors = array("i", bytes(4 * n))
        self._kind = bytearray(n)
        self._other: dict[int, FileVerdict] = {}  # listed, but not as listed
        self._extra = FileTable(self._kinds)
        self._lock = threading.Lock()
        self._order: array[int] | None = None  # roster positions in path order, if unsorted

    def record(self, v: FileVerdict, at: int | None, digest: bytes = b"") -> None:
        """Keep ``v``, the verdict of roster entry ``at`` (None: a file in no roster);
        ``digest`` is its raw SHA-256 (default: from ``v.sha256``)."""
        roster = self._roster
        if at is None or roster is None:
            with self._lock:
                self._extra.append(v)
        elif (
            v.errors == 0
            and v.tensors < 1 << 31
            and v.sha256 is not None
            and roster.describes(at, v.path, v.size, digest or bytes.fromhex(v.sha256))
        ):
            # each entry is recorded once, by one thread: its own columns need no lock
            kind = self._kinds.known.get(v.kind)
            if kind is None:
                with self._lock:
                    kind = self._kinds.code(v.kind)
            self._state[at] = _AS_LISTED
            self._mtime[at] = v.mtime_ns
            self._tensors[at] = v.tensors
            self._kind[at] = kind
        else:
            with self._lock:
                self._other[at] = v
                self._state[at] = _OTHER

    def listed_unread(self) -> int:
        """How many roster entries were not read to the end (not pulled, unreadable ...)."""
        unread = self._state.count(_UNREAD)
        return unread + sum(1 for v in self._other.values() if v.sha256 is None)

    def total_bytes(self) -> int:
        """The sizes of all verdicts added up (no verdict is made)."""
        sizes = () if self._roster is None else self._roster.sizes
        as_listed = self._state.translate(_AS_LISTED_MASK)
        return (
            sum(itertools.compress(sizes, as_listed))
            + sum(v.size for v in self._other.values())
            + sum(self._extra.sizes)
        )

    def tally(self) -> Tally:
        as_listed = self._state.translate(_AS_LISTED_MASK)
        extra = self._extra
        codes = Counter(itertools.compress(self._kind, as_listed)) + Counter(extra._kind)
        named = Counter({self._kinds.names[code]: n for code, n in codes.items()})
        named.update(v.kind for v in self._other.values())
        tensors = sum(itertools.compress(self._tensors, as_listed)) + sum(extra._tensors)
        tensors += sum(v.tensors for v in self._other.values())
        return Tally(self.total_bytes(), named, tensors)

    def rows_named(self, paths: Iterable[str]) -> Iterator[Row]:
        """The verdicts of the files named ``paths`` (roster entries by lookup, the files in
        no roster in one pass over their table), in no particular order."""
        roster, rest = self._roster, set()
        for path in paths:
            at = None if roster is None else roster.find(normalize_path(path))
            if roster is None or at is None or roster.paths[at] != path:
                rest.add(path)
            elif self._state[at] == _OTHER:
                yield _as_row(self._other[at])
            elif self._state[at] == _AS_LISTED:
                digest = roster.sha256_column[32 * at : 32 * at + 32].hex()
                name = self._kinds.names[self._kind[at]]
                yield path, roster.sizes[at], self._mtime[at], digest, name, self._tensors[at], 0
        if rest:
            yield from (row for row in self._extra.sorted_rows() if row[0] in rest)

    def rows(self) -> Iterator[Row]:
        """Every verdict as a plain tuple, in path order: what ``FileVerdict(*row)`` holds,
        at a tenth of its cost (for the marker and the report, which read each file once)."""
        listed = self._listed_rows()
        if not len(self._extra):
            return listed
        return heapq.merge(listed, self._extra.sorted_rows(), key=_path)

    def _listed_rows(self) -> Iterator[Row]:
        roster = self._roster
        if roster is None:
            return
        state, mtime, tensors, kind = self._state, self._mtime, self._tensors, self._kind
        paths, sizes, sha, names = (
            roster.paths,
            roster.sizes,
            roster.sha256_column,
            self._kinds.names,
        )
        if not roster.is_sorted and self._order is None:
            self._order = array("q", sorted(range(len(paths)), key=paths.__getitem__))
        for i in range(len(state)) if self._order is None else self._order:
            s = state[i]
            if s == _AS_LISTED:
                digest = sha[32 * i : 32 * i + 32].hex()
                yield paths[i], sizes[i], mtime[i], digest, names[kind[i]], tensors[i], 0
            elif s == _OTHER:
                yield _as_row(self._other[i])

    def unread_listed(self) -> Iterator[int]:
        """Roster positions of the entries no file was matched to."""
        at = self._state.find(_UNREAD)
        while at >= 0:
            yield at
            at = self._state.find(_UNREAD, at + 1)

    def __iter__(self) -> Iterator[FileVerdict]:
        return (FileVerdict(*row) for row in self.rows())

    def __len__(self) -> int:
        return len(self._state) - self._state.count(_UNREAD) + len(self._extra)

    @overload
    def __getitem__(self, i: int) -> FileVerdict: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[FileVerdict, ...]: ...

    def __getitem__(self, i: int | slice) -> FileVerdict | tuple[FileVerdict, ...]:
        """By position in path order (a walk from the start: iterate instead)."""
        if isinstance(i, slice):
            return tuple(self)[i]
        k = i + len(self) if i < 0 else i
        if not 0 <= k < len(self):
            raise IndexError("verdict index out of range")
        return next(itertools.islice(self, k, None))

    def __repr__(self) -> str:
        return f"Verdicts({len(self)} files)"

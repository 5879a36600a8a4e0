"""The roster of a result directory read on the box: built, stat'ed or re-hashed over one exec.

The box runs the stdlib-only ``manifest_builder`` module sent on stdin (``python3 -I -S -``):
nothing is installed there and nothing is left behind, unless ``write=True`` asks for
``ROOT/PULL_MANIFEST.json`` on the box too. Three requests, each one round trip:

* ``build_roster``: the manifest (what ``rentcheck manifest build`` writes), parsed into
  columns as it arrives (its exact bytes to a file, if asked), and whether the box has
  ``rsync``;
* ``stat_roster``: size, ``mtime_ns``, ``ctime_ns`` and inode of every file under ROOT (the
  builder's walk and policy, no hashing), held in columns: how teardown and the
  changed-during-pull check re-read the box cheaply;
* ``hash_files``: roster entries (SHA-256) for the named files only.

The answer is one JSON line (with the program's own peak RSS), then the payload compressed
with zlib. Both ends stream: the box compresses the payload as it walks (the manifest's
pieces, the stat's rows), holding at most ``INLINE_MAX`` of it before it spools the rest to
a temp file, read back here in pieces and deleted there (the transport bounds one
command's output); this end decompresses a piece at a time and parses as it goes. Neither
holds a million-file roster whole.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import json
import os
import posixpath
import shlex
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from rentcheck.errors import RemoteError, UsageError

if TYPE_CHECKING:
    from rentcheck.box.transport import Box
    from rentcheck.pull.manifest import Manifest

__all__ = [
    "BoxFile",
    "BoxFiles",
    "BoxRoster",
    "BoxTree",
    "Hashed",
    "build_roster",
    "hash_files",
    "remote_program",
    "stat_roster",
]

DEFAULT_TIMEOUT = 900.0  # hashing a few hundred GB of checkpoints takes minutes
# A compressed answer larger than this is spooled to a file on the box and read in pieces
# (SPOOL_PIECE each): no roster is too big for the transport's bound on one command's output.
INLINE_MAX = 4 << 20
ANSWER_CHUNK = 1 << 20  # decompressed at a time
ANSWER_MAX = 1 << 30  # decompressed bytes of a stat or hash answer (the manifest has its own)

_SHELL = (
    "command -v python3 >/dev/null 2>&1 || "
    "{ echo 'rentcheck: the box has no python3' >&2; exit 127; }; exec python3 -I -S -"
)


def remote_program(request: Mapping[str, Any]) -> bytes:
    """The program sent on stdin: the builder's source and the request as two names, then
    the answering program (``payload/roster_answer.py``)."""
    from rentcheck.payload import PAYLOAD_DIR

    def source(name: str) -> str:
        with open(os.path.join(PAYLOAD_DIR, name), encoding="utf-8") as handle:
            return handle.read()

    builder, request_text = source("manifest_builder.py"), json.dumps(dict(request))
    return (
        f"BUILDER_SOURCE = {builder!r}\nREQUEST = {request_text!r}\n" + source("roster_answer.py")
    ).encode()


# Reads COUNT bytes at OFFSET of the spooled answer; with COUNT 0 deletes it.
_SPOOL_READER = (
    "import os, sys\n"
    "path, offset, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "if not count:\n"
    "    os.unlink(path); sys.exit(0)\n"
    "with open(path, 'rb') as f:\n"
    "    f.seek(offset); sys.stdout.buffer.write(f.read(count))\n"
)
SPOOL_PIECE = 8 << 20  # under the transport's bound on one command's output


def _spool_pieces(box: Box, head: Mapping[str, Any], timeout: float, what: str) -> Iterator[bytes]:
    """The pieces of the answer the box spooled to a file (too big for one command's
    output), read one at a time as the reader asks (the caller deletes the file)."""
    spool, size = str(head.get("spool")), head.get("spool_bytes")
    quoted = shlex.quote(spool)
    assert isinstance(size, int)  # noqa: S101 - checked by _spool_name
    for offset in range(0, size, SPOOL_PIECE):
        count = min(SPOOL_PIECE, size - offset)
        script = f"exec python3 -I -S -c {shlex.quote(_SPOOL_READER)} {quoted} {offset} {count}"
        result = box.run(script, timeout=timeout, label=what)
        if not result.ok or len(result.stdout) != count:
            raise RemoteError(
                f"{what} on {box.name}: reading the spooled answer failed "
                f"(exit {result.exit_status}): {result.stderr_tail()}"
            )
        yield result.stdout


def _spool_name(box: Box, head: Mapping[str, Any], what: str) -> str:
    spool, size = str(head.get("spool")), head.get("spool_bytes")
    name = posixpath.basename(spool)
    if not name.startswith("rentcheck-answer-") or not isinstance(size, int) or size < 0:
        raise RemoteError(f"{what} on {box.name}: a malformed spooled answer ({spool!r})")
    return spool


class _Answer(io.RawIOBase):
    """The payload of one answer, decompressed as it is read, a piece at a time: nothing
    holds it whole (a million-file roster is parsed straight into columns), and more than
    ``limit`` bytes of it (a zlib bomb) is refused. ``close`` deletes a spooled answer on
    the box. ``keep`` receives every byte read (the manifest's exact bytes, for a file)."""

    def __init__(
        self,
        box: Box,
        head: Mapping[str, Any],
        inline: bytes,
        *,
        timeout: float,
        what: str,
        limit: int,
        keep: IO[bytes] | None = None,
    ) -> None:
        super().__init__()
        self._box, self._what, self._limit, self._keep = box, what, limit, keep
        self._spool = _spool_name(box, head, what) if "spool" in head else None
        self._pieces: Iterator[bytes] = (
            _spool_pieces(box, head, timeout, what) if self._spool else iter((inline,))
        )
        self._zlib = zlib.decompressobj()
        self._tail = b""  # compressed input not yet decompressed
        self._ready = b""
        self._at = 0
        self.size = 0  # decompressed bytes so far

    def readable(self) -> bool:
        return True

    def _fill(self) -> bool:
        while not self._ready or self._at >= len(self._ready):
            if not self._tail:
                if self._zlib.eof:
                    return False
                piece = next(self._pieces, None)
                if piece is None:
                    raise RemoteError(f"{self._what} on {self._box.name}: the answer is cut short")
                self._tail = piece
            try:
                data = self._zlib.decompress(self._tail, ANSWER_CHUNK)
            except zlib.error as exc:
                raise RemoteError(
                    f"{self._what} on {self._box.name}: damaged answer ({exc})"
                ) from None
            self._tail = self._zlib.unconsumed_tail
            if self._zlib.eof and (self._zlib.unused_data or next(self._pieces, None)):
                raise RemoteError(f"{self._what} on {self._box.name}: data after the answer")
            self.size += len(data)
            if self.size > self._limit:
                raise RemoteError(
                    f"{self._what} on {self._box.name}: the answer is over {self._limit} bytes"
                )
            if self._keep is not None:
                self._keep.write(data)
            self._ready, self._at = data, 0
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._fill():
            return 0
        n = min(len(buffer), len(self._ready) - self._at)
        buffer[:n] = self._ready[self._at : self._at + n]
        self._at += n
        return n

    def close(self) -> None:
        spool, self._spool = self._spool, None
        if spool is not None:
            self._box.run(
                f"exec python3 -I -S -c {shlex.quote(_SPOOL_READER)} {shlex.quote(spool)} 0 0",
                timeout=60.0,
                label=f"{self._what} (cleanup)",
            )
        super().close()


def _login_script_output(stdout: bytes, host: str, what: str) -> None:
    """RemoteError naming text the box printed before the answer, as audit names it: a
    login script (motd, an echo in ~/.bashrc) printing for non-interactive commands."""
    at = stdout.find(b'{"ok": ')
    if at <= 0:
        return
    head = stdout[:at].decode("utf-8", "replace")
    raise RemoteError(
        f"{what} on {host}: the box printed {head[:200]!r} before the answer, so it cannot "
        "be trusted as the roster",
        hint="a login script that prints text (motd, an echo in ~/.bashrc or ~/.profile) "
        "does this: print only in interactive shells (case $- in *i*) ... esac)",
    )


def _ask_stream(
    box: Box,
    request: Mapping[str, Any],
    timeout: float,
    what: str,
    *,
    limit: int,
    keep: IO[bytes] | None = None,
) -> tuple[dict[str, Any], _Answer]:
    """The box's head line and a reader of its payload (close it: that deletes a spool)."""
    request = {**request, "inline_max": INLINE_MAX}
    result = box.run(_SHELL, stdin=remote_program(request), timeout=timeout, label=what)
    line, sep, rest = result.stdout.partition(b"\n")
    try:
        head = json.loads(line) if sep else None
    except ValueError:
        head = None
    if not isinstance(head, dict):
        _login_script_output(result.stdout, box.name, what)
        if result.exit_status == 127:
            raise UsageError(
                f"{box.name} has no python3: the roster is built there with it",
                hint="install python3 on the box (any 3.7+), or build the manifest elsewhere "
                "and pull with rsync by hand",
            )
        raise RemoteError(
            f"{what} on {box.name} gave no answer (exit {result.exit_status}): "
            f"{result.stderr_tail()}",
            hint="run `python3 -V` on the box; the roster needs Python 3.7 or later",
        )
    if not head.get("ok"):
        raise UsageError(
            f"{what} on {box.name}: {head.get('error')}", hint=str(head.get("hint") or "")
        )
    answer = _Answer(box, head, rest, timeout=timeout, what=what, limit=limit, keep=keep)
    return head, answer


def _ask(
    box: Box, request: Mapping[str, Any], timeout: float, what: str
) -> tuple[dict[str, Any], bytes]:
    """The head and the whole payload (for answers that name a few files)."""
    head, answer = _ask_stream(box, request, timeout, what, limit=ANSWER_MAX)
    with answer:
        return head, answer.read()


def _peak(head: Mapping[str, Any]) -> int | None:
    value = head.get("peak_rss_kib")
    return value if isinstance(value, int) and value >= 0 else None


@dataclass(frozen=True)
class BoxRoster:
    """The roster as the box built it (parsed and validated, in columns), and what the box
    offers for the transfer."""

    manifest: Manifest
    root: str  # the real path on the box
    rsync: bool
    python: str
    box_peak_rss_kib: int | None = None  # the roster program's own peak on the box


def build_roster(
    box: Box,
    remote_root: str,
    *,
    run_id: str | None = None,
    write: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    keep: IO[bytes] | None = None,
) -> BoxRoster:
    """Build the roster on the box and parse it as it streams in (FormatError when the box's
    roster is not a valid manifest); ``keep`` receives its exact bytes."""
    from rentcheck.pull.manifest import MAX_MANIFEST_BYTES, read_manifest

    request = {"mode": "roster", "root": remote_root, "run_id": run_id, "write": write}
    what = "building the roster"
    head, answer = _ask_stream(box, request, timeout, what, limit=MAX_MANIFEST_BYTES, keep=keep)
    with answer, io.BufferedReader(answer, 1 << 20) as source:
        manifest = read_manifest(source)
        # The last piece is asked for by the parser's own end check; the answer is whole.
    return BoxRoster(
        manifest, str(head["root"]), bool(head["rsync"]), str(head["python"]), _peak(head)
    )


@dataclass(frozen=True)
class BoxFile:
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # 0: not known (a leftover); ctime cannot be set back by utime
    ino: int = 0


class BoxFiles(Mapping[str, BoxFile]):
    """Path -> BoxFile for every file of a stat answer, held in columns (a path string and
    four 64-bit numbers a file, not an object each); BoxFiles are made on access. Found by
    bisect when the paths came sorted (the builder's walk), else through an index."""

    def __init__(self, known: Sequence[str] = ()) -> None:
        self._paths: list[str] = []
        self._numbers = array("q")  # size, mtime_ns, ctime_ns per file
        self._ino = array("Q")
        self._index: dict[str, int] | None = None
        self._sorted = True
        # Paths already held (the roster's, sorted as the walk yields them): an equal path
        # is kept as that string, so a file listed in both costs its numbers only.
        self._known, self._cursor = known, 0

    def _shared(self, path: str) -> str:
        known, at = self._known, self._cursor
        while at < len(known) and known[at] < path:
            at += 1
        self._cursor = at
        return known[at] if at < len(known) and known[at] == path else path

    def add(self, path: str, size: int, mtime_ns: int, ctime_ns: int, ino: int) -> None:
        if self._paths and path <= self._paths[-1]:
            self._sorted = False
        elif self._known:
            path = self._shared(path)
        self._paths.append(path)
        self._numbers.extend((size, mtime_ns, ctime_ns))
        self._ino.append(ino)

    def _at(self, path: str) -> int | None:
        if self._sorted:
            i = bisect.bisect_left(self._paths, path)
            return i if i < len(self._paths) and self._paths[i] == path else None
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self._paths)}
        return self._index.get(path)

    def __getitem__(self, path: str) -> BoxFile:
        i = self._at(path) if isinstance(path, str) else None
        if i is None:
            raise KeyError(path)
        size, mtime, ctime = self._numbers[3 * i : 3 * i + 3]
        return BoxFile(size, mtime, ctime, self._ino[i])

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._at(path) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


@dataclass(frozen=True)
class BoxTree:
    """Every file under the root on the box now (sizes, mtimes), and unfinished writes."""

    files: Mapping[str, BoxFile]
    leftovers: dict[str, BoxFile]
    root: str
    box_peak_rss_kib: int | None = None  # the stat program's own peak on the box


# One line of a stat answer: rows of about 64 KB in all, the last one's path at most 4,096
# characters (escaped: six bytes each at worst).
STAT_LINE_MAX = 1 << 20
_INT64 = (-(1 << 63), 1 << 64)


def _stat_line(line: bytes, what: str) -> list[list[Any]]:
    """The rows of one line of a stat answer, each checked: a path and 64-bit integers."""
    try:
        rows = json.loads(line)
    except ValueError:
        rows = None
    if not isinstance(rows, list):
        raise RemoteError(f"{what}: a malformed line in the answer ({line[:120]!r})")
    low, high = _INT64
    for row in rows:
        ok = isinstance(row, list) and len(row) in (3, 5) and isinstance(row[0], str)
        if not ok or not all(type(n) is int and low <= n < high for n in row[1:]):
            raise RemoteError(f"{what}: a malformed row in the answer ({str(row)[:120]!r})")
    return rows


def stat_roster(
    box: Box, remote_root: str, *, timeout: float = DEFAULT_TIMEOUT, known: Sequence[str] = ()
) -> BoxTree:
    """Size, mtime, ctime and inode of every file under the root on the box, streamed in
    (JSON lists of rows, a line each) and held in columns; ``known``: sorted paths already
    held here (the roster's), whose strings are shared."""
    what = "re-reading the box"
    head, answer = _ask_stream(box, {"mode": "stat", "root": remote_root}, timeout, what,
                               limit=ANSWER_MAX)  # fmt: skip
    files, left = BoxFiles(known), {}
    with answer, io.BufferedReader(answer, 1 << 20) as lines:
        while line := lines.readline(STAT_LINE_MAX + 1):
            if len(line) > STAT_LINE_MAX or not line.endswith(b"\n"):
                raise RemoteError(f"{what} on {box.name}: a line over {STAT_LINE_MAX} bytes")
            for row in _stat_line(line, f"{what} on {box.name}"):
                if len(row) == 5:
                    files.add(row[0], row[1], row[2], row[3], row[4])
                else:
                    left[row[0]] = BoxFile(row[1], row[2])
    return BoxTree(files, left, str(head["root"]), _peak(head))


@dataclass(frozen=True)
class Hashed:
    """Roster entries by path (hashed on the box now), paths not there, paths that changed
    while they were read (still being written), paths that could not be read (and why)."""

    entries: dict[str, dict[str, Any]]
    missing: frozenset[str] = frozenset()
    unstable: frozenset[str] = frozenset()
    unreadable: Mapping[str, str] = dataclasses.field(default_factory=dict)


def hash_files(
    box: Box, remote_root: str, paths: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT
) -> Hashed:
    wanted = list(paths)
    if not wanted:
        return Hashed({})
    request = {"mode": "hash", "root": remote_root, "paths": wanted}
    _, data = _ask(box, request, timeout, "hashing on the box")
    doc = json.loads(data)
    return Hashed(
        {str(e["path"]): e for e in doc["files"]},
        frozenset(str(p) for p in doc["missing"]),
        frozenset(str(p) for p in doc["unstable"]),
        {str(p): str(why) for p, why in (doc.get("unreadable") or {}).items()},
    )


def remote_path(root: str, rel: str) -> str:
    """A roster path under the box's root (roster paths are validated relative POSIX paths)."""
    return posixpath.join(root, rel) if root else rel

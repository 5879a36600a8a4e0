"""Build PULL_MANIFEST.json on the box: the exact roster of a result directory, hashed.

This one module is the whole remote side. It imports nothing but the standard library (blake3 is
used when importable), so it runs on a bare box as ``python3 -I -S manifest_builder.py ROOT`` or
sent over SSH on stdin (``python3 -I -S - ROOT < manifest_builder.py``). Keep it that way: no
rentcheck imports, no third-party imports at module level, syntax that Python 3.7 accepts
(checked with 3.7, 3.8 and 3.13).

Policy (the verifier imports the same functions, so both sides agree):

* every regular file under ROOT is listed with its POSIX path relative to ROOT (exactly as named
  on disk), size, ``mtime_ns`` and SHA-256 (and BLAKE3 when available);
* refused with exit 2: symlinks that resolve outside ROOT, dangling symlinks, symlinks to
  directories, devices/FIFOs/sockets, names that are not valid UTF-8 or contain a backslash or
  control character, and files that change while they are hashed;
* leftovers of unfinished writes (``*.tmp``, ``*.partial``, ``.tmpXXXXXX``, ``tmp-checkpoint-*``
  ...; see ``leftover_reason``) are recorded under ``leftovers`` with their size and NOT hashed;
  the build still succeeds (exit 0, with a warning) and the verifier reports each one as RC510;
* ``PULL_MANIFEST.json`` and ``PULL_VERIFIED.json`` at the top of ROOT are never listed;
* the output is written atomically (temp file in the same directory, fsync, rename, fsync dir).

Cost and memory (see ``iter_entries``): the tree is walked in sorted order and the manifest is
streamed to the temp file as it is hashed, so memory does not grow with the file count; each
small file costs one open, one ``fstat``, one read and one ``fstat`` after (to refuse a file that
changed), in the walking thread; large files are hashed by a thread pool.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import hashlib
import importlib
import json
import os
import re
import secrets
import socket
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SCHEMA = "rentcheck/manifest/v1"
MANIFEST_NAME = "PULL_MANIFEST.json"
VERIFIED_NAME = "PULL_VERIFIED.json"
RESERVED_NAMES = (MANIFEST_NAME, VERIFIED_NAME)
CHUNK = 4 * 1024 * 1024
SMALL = 256 * 1024  # files up to this size are hashed where the walk finds them (no hand-off)
WINDOW = 4096  # entries held back at most, waiting for an earlier large file
LEFTOVER_SUFFIXES = (
    ".tmp",
    ".temp",
    ".part",
    ".partial",
    ".incomplete",
    ".crdownload",
    ".rentcheck-tmp",
)
_RUST_TEMPFILE = re.compile(r"\A\.tmp[A-Za-z0-9]{6}\Z")
_RUN_ID = re.compile(r"\A[^\x00-\x20\x7f/\\]{1,200}\Z")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


class BuildError(Exception):
    """The manifest cannot be built; ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (fix: {self.hint})"


def leftover_reason(rel: str) -> str | None:
    """Why ``rel`` looks like the leftover of an unfinished write, or None."""
    for part in rel.split("/"):
        low = part.lower()
        for suffix in LEFTOVER_SUFFIXES:
            if low.endswith(suffix):
                return f"name ends with {suffix}"
        if ".tmp-" in low or ".tmp." in low:
            return "temporary name (.tmp-)"
        if _RUST_TEMPFILE.match(part):
            return "temporary file of an interrupted save (.tmpXXXXXX)"
        if low.startswith("tmp-checkpoint-"):
            return "unfinished Trainer checkpoint directory (tmp-checkpoint-*)"
        if part == ".rsync-partial":
            return "rsync partial directory"
    return None


def check_name(rel: str) -> None:
    """Refuse names the manifest cannot represent faithfully."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        raise BuildError(f"name {shown!r} is not valid UTF-8", "rename it") from None
    if _BAD_CHARS.search(rel):
        raise BuildError(f"name {rel!r} contains a backslash or control character", "rename it")


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def _listing(
    root: str, prefix: str, root_real: str, excluded: set[str], excluded_names: set[str]
) -> list[tuple[str, str, str | None]]:
    """One directory's entries as (sort key, rel, path to read or None for a directory).

    Sorted (descending, they are popped from the end) by name, with ``/`` appended to
    directory names: a depth-first walk in that order yields rel paths exactly in
    ``sorted()`` order, so the roster streams without ever being held whole.
    """
    items: list[tuple[str, str, str | None]] = []
    with os.scandir(os.path.join(root, prefix) if prefix else root) as entries:
        for entry in entries:
            rel = prefix + entry.name
            check_name(rel)
            if not prefix and entry.name in RESERVED_NAMES:
                continue
            if entry.name in excluded_names and os.path.realpath(entry.path) in excluded:
                continue
            target = _classify(entry, rel, root_real)
            items.append(
                (entry.name + "/", rel, None) if target is None else (entry.name, rel, target)
            )
    items.sort(reverse=True)
    return items


def iter_tree(root: str, exclude: tuple[str, ...] = ()) -> Iterator[tuple[str, str | None]]:
    """(rel path, path to read) of every file, in sorted rel order; None to read: a leftover.

    Memory is one directory listing per level of the tree, whatever the file count.
    """
    root_real = os.path.realpath(root)
    excluded = {os.path.realpath(p) for p in exclude}
    names = {os.path.basename(p) for p in excluded}
    stack = [_listing(root, "", root_real, excluded, names)]
    while stack:
        items = stack[-1]
        if not items:
            stack.pop()
            continue
        _, rel, target = items.pop()
        if target is None:
            stack.append(_listing(root, rel + "/", root_real, excluded, names))
        else:
            yield rel, (None if leftover_reason(rel) else target)


def _classify(entry: os.DirEntry[str], rel: str, root_real: str) -> str | None:
    """The path to read for a file, or None for a directory to descend into."""
    if entry.is_symlink():
        real = os.path.realpath(entry.path)
        if not _inside(real, root_real):
            raise BuildError(
                f"symlink {rel!r} points outside ROOT to {real!r}",
                "copy the target into ROOT in place of the link: cp --remove-destination "
                '"$(readlink -f LINK)" LINK',
            )
        try:
            st = os.stat(real)
        except OSError:
            raise BuildError(f"symlink {rel!r} is dangling", "delete the link") from None
        if stat.S_ISDIR(st.st_mode):
            raise BuildError(
                f"symlink {rel!r} points to a directory", "replace it with the directory itself"
            )
        if not stat.S_ISREG(st.st_mode):
            raise BuildError(f"symlink {rel!r} points to a special file", "delete the link")
        return real
    if entry.is_dir(follow_symlinks=False):
        return None
    if entry.is_file(follow_symlinks=False):
        return entry.path
    raise BuildError(
        f"{rel!r} is a device, FIFO or socket, not a regular file", "remove it from ROOT"
    )


_BLAKE3: list[Any] = []  # the blake3 constructor, looked up once (None: not installed)


def _blake3() -> Any:
    if not _BLAKE3:  # a failed import is not cached by Python: look only once per process
        try:
            _BLAKE3.append(importlib.import_module("blake3").blake3)
        except ImportError:
            _BLAKE3.append(None)
    return _BLAKE3[0]


def _open(rel: str, path: str) -> tuple[int, os.stat_result]:
    """The open file and its one ``fstat`` (the walk itself stats nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BuildError(f"cannot read {rel!r}: {exc.strerror}", "fix its permissions") from None
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


_BUFFERS = threading.local()


def _buffer(size: int) -> bytearray:
    """This thread's read buffer: allocated (and its pages faulted in) once, not per file."""
    buf = getattr(_BUFFERS, "buf", None)
    if buf is None or len(buf) < size:
        buf = _BUFFERS.buf = bytearray(size)
    return buf


def _hash_fd(
    rel: str, fd: int, before: os.stat_result, with_blake3: bool, buf: bytearray
) -> dict[str, Any]:
    """Hash the open file ``fd`` (reads sized to the file) into one roster entry; closes it."""
    sha = hashlib.sha256()
    new_b3 = _blake3() if with_blake3 else None
    b3 = new_b3() if new_b3 is not None else None
    total, want = 0, before.st_size
    try:
        with memoryview(buf) as view:
            while total < want:  # the fstat after the read catches a file that grew
                n = os.readv(fd, [buf])
                if not n:
                    break
                with view[:n] as piece:
                    sha.update(piece)
                    if b3 is not None:
                        b3.update(piece)
                total += n
        after = os.fstat(fd)
    except OSError as exc:
        raise BuildError(f"cannot read {rel!r}: {exc.strerror}", "fix its permissions") from None
    finally:
        os.close(fd)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or (
        total != after.st_size
    ):
        raise BuildError(f"{rel!r} changed while it was hashed", "wait for the writer to finish")
    entry: dict[str, Any] = {
        "path": rel,
        "size": total,
        "mtime_ns": after.st_mtime_ns,
        "sha256": sha.hexdigest(),
    }
    if b3 is not None:
        entry["blake3"] = b3.hexdigest()
    return entry


def hash_file(rel: str, path: str, with_blake3: bool = True) -> dict[str, Any]:
    """One roster entry; refuses a file that changes while it is read."""
    fd, before = _open(rel, path)
    return _hash_fd(rel, fd, before, with_blake3, _buffer(CHUNK))


def _hash_big(rel: str, fd: int, before: os.stat_result, with_blake3: bool) -> dict[str, Any]:
    return _hash_fd(rel, fd, before, with_blake3, _buffer(CHUNK))


def iter_entries(
    root: str,
    jobs: int | None = None,
    with_blake3: bool = True,
    exclude: tuple[str, ...] = (),
    leftovers: list[dict[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The roster entries of ``root`` in sorted path order, streamed (BuildError on a refusal).

    Small files (up to ``SMALL`` bytes) are read and hashed right where the walk finds them,
    one read each into one reused buffer: no hand-off, no allocation per file. Larger files go
    to ``jobs`` hashing threads (hashlib releases the GIL), so big files hash in parallel while
    the walk goes on. Entries are yielded in order; at most ``WINDOW`` wait for an earlier
    large file, so memory stays bounded whatever the file count. Leftovers are appended to
    ``leftovers`` (with their size), not hashed.
    """
    workers = max(1, jobs or min(8, os.cpu_count() or 1))
    buf = bytearray(SMALL)
    pending: collections.deque[Any] = collections.deque()  # entry dicts or (future, fd)
    inflight = 0
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for rel, path in iter_tree(root, exclude):
            if path is None:
                if leftovers is not None:
                    size = os.lstat(os.path.join(root, rel)).st_size
                    leftovers.append({"path": rel, "size": size, "reason": leftover_reason(rel)})
                continue
            fd, st = _open(rel, path)
            if st.st_size <= SMALL:
                pending.append(_hash_fd(rel, fd, st, with_blake3, buf))
            else:
                pending.append((pool.submit(_hash_big, rel, fd, st, with_blake3), fd))
                inflight += 1
            while pending:
                head = pending[0]
                if isinstance(head, tuple):
                    busy = not head[0].done()
                    if busy and len(pending) <= WINDOW and inflight < 2 * workers:
                        break
                    head = head[0].result()
                    inflight -= 1
                pending.popleft()
                yield head
        while pending:
            head = pending.popleft()
            yield head[0].result() if isinstance(head, tuple) else head
    finally:
        for item in pending:  # refused or abandoned: close what never reached a worker
            if isinstance(item, tuple) and item[0].cancel():
                os.close(item[1])
        pool.shutdown(wait=True)


def default_run_id() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def _header(root: str, run_id: str | None) -> dict[str, Any]:
    """Everything but the roster; refuses a ROOT that is no directory or a bad run id."""
    if not os.path.isdir(root):
        raise BuildError(f"ROOT {root!r} is not a directory", "pass the run's result directory")
    run_id = default_run_id() if run_id is None else run_id
    if not _RUN_ID.match(run_id):
        raise BuildError(
            f"run id {run_id!r} is empty, too long or has spaces, slashes or control characters",
            "use letters, digits and . _ - : only",
        )
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "tool": "rentcheck-manifest-builder/1 python/{}.{}".format(*sys.version_info[:2]),
    }


def build_manifest(
    root: str,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
    exclude: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The manifest as a JSON-ready dict (held whole; ``write_manifest`` streams it)."""
    doc = _header(root, run_id)
    leftovers: list[dict[str, Any]] = []
    entries = list(iter_entries(root, jobs, with_blake3, exclude, leftovers))
    doc.update(files=entries, leftovers=leftovers)
    doc["totals"] = {"files": len(entries), "bytes": sum(e["size"] for e in entries)}
    return doc


def manifest_pieces(
    root: str,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
    *,
    exclude: tuple[str, ...] = (),
    summary: dict[str, Any] | None = None,
) -> Iterator[bytes]:
    """The manifest of ``root`` as consecutive pieces of its bytes, produced as the tree is
    walked and hashed (exactly ``dumps(build_manifest(...))``; ``created_at`` is the time the
    build started): memory does not grow with the file count. ``summary``, when given, is
    filled with the manifest less its ``files`` once the last piece is out. A ROOT that is
    no directory or a bad run id is refused here, before any piece."""
    doc = _header(root, run_id)
    leftovers: list[dict[str, Any]] = []
    rest = {k: v for k, v in doc.items() if k != "created_at"}
    rest["leftovers"] = leftovers  # filled as the walk goes, written after the files
    entries = iter_entries(root, jobs, with_blake3, exclude, leftovers)
    pieces = render_pieces(doc["created_at"], entries, rest)
    return _then(pieces, lambda: summary.update(doc, **rest) if summary is not None else None)


def _then(pieces: Iterator[bytes], done: Any) -> Iterator[bytes]:
    yield from pieces
    done()


def render_pieces(
    created_at: str, entries: Iterable[dict[str, Any]], rest: dict[str, Any]
) -> Iterator[bytes]:
    """A manifest's bytes from its entries (in order) and its other top-level values
    (``rest``: host, leftovers, run_id, schema, tool; ``totals`` is set here, counted as the
    entries go by), a few hundred entries a piece: exactly ``dumps`` of the whole document."""
    head = _json({"created_at": created_at})
    yield (head[: -len("\n}")] + ',\n  "files": [').encode()
    count = nbytes = 0
    sep = "\n"
    batch: list[str] = []
    for entry in entries:
        batch.append(sep + _entry_text(entry))
        sep = ",\n"
        count += 1
        nbytes += entry["size"]
        if len(batch) >= 256:  # a few dozen KB a piece: few calls, little held
            yield "".join(batch).encode()
            batch = []
    if batch:
        yield "".join(batch).encode()
    rest["totals"] = {"files": count, "bytes": nbytes}
    yield (("\n  ]," if count else "],") + _json(rest)[1:] + "\n").encode()


def write_manifest(
    root: str,
    output: str,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
) -> dict[str, Any]:
    """Stream the manifest of ``root`` into ``output`` atomically; the manifest without its
    ``files`` (for the summary). The bytes are exactly ``dumps(build_manifest(...))``:
    ``created_at`` is the time the build started."""
    summary: dict[str, Any] = {}
    target = AtomicFile(output)
    exclude = (output, target.tmp)
    pieces = manifest_pieces(root, run_id, jobs, with_blake3, exclude=exclude, summary=summary)
    with target as out:
        for piece in pieces:
            out.write(piece)
    return summary


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _entry_text(entry: dict[str, Any]) -> str:
    """``_json(entry)`` indented as an item of the top-level ``files`` list, 10x faster."""
    b3 = entry.get("blake3")
    path = json.dumps(entry["path"], ensure_ascii=False)
    return (
        "    {\n"
        + ("" if b3 is None else f'      "blake3": "{b3}",\n')
        + f'      "mtime_ns": {entry["mtime_ns"]},\n      "path": {path},\n'
        + f'      "sha256": "{entry["sha256"]}",\n      "size": {entry["size"]}\n    }}'
    )


class AtomicFile:
    """Bytes written to a temp name beside ``path``, then fsync'd and renamed over it (readers
    see the old file or the new one, never half); the temp file is removed on any error."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.directory = os.path.dirname(os.path.abspath(path))
        self.tmp = os.path.join(
            self.directory, f".{os.path.basename(path)}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        )
        self._file: Any = None

    def __enter__(self) -> AtomicFile:
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._file = os.fdopen(fd, "wb", buffering=1 << 20)
        return self

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        done = False
        try:
            if kind is None:
                self._file.flush()
                os.fsync(self._file.fileno())
            self._file.close()
            if kind is None:
                os.replace(self.tmp, self.path)
                done = True
        finally:
            if not done:
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp)
        if done:
            _fsync_dir(self.directory)


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    with AtomicFile(path) as out:
        out.write(data)


def dumps(manifest: dict[str, Any]) -> bytes:
    return (_json(manifest) + "\n").encode()


def check_output(root: str, output: str) -> None:
    """Refuse an output path inside ROOT other than ROOT/PULL_MANIFEST.json."""
    root_real, out_real = os.path.realpath(root), os.path.realpath(output)
    if _inside(out_real, root_real) and out_real != os.path.join(root_real, MANIFEST_NAME):
        raise BuildError(
            f"output {output!r} is inside ROOT but is not ROOT/{MANIFEST_NAME}",
            "omit -o, or write the manifest outside ROOT",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rentcheck manifest build", description="Write PULL_MANIFEST.json for ROOT."
    )
    parser.add_argument("root", metavar="ROOT")
    parser.add_argument("-o", "--output", help=f"default: ROOT/{MANIFEST_NAME}")
    parser.add_argument("--run-id", help="default: <UTC time>-<random>")
    parser.add_argument("--jobs", type=int, default=None, help="files hashed at once")
    parser.add_argument("--no-blake3", action="store_true", help="SHA-256 only")
    args = parser.parse_args(argv)
    output = args.output or os.path.join(args.root, MANIFEST_NAME)
    try:
        check_output(args.root, output)
        manifest = write_manifest(args.root, output, args.run_id, args.jobs, not args.no_blake3)
    except BuildError as exc:
        print(f"rentcheck: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"rentcheck: error: {exc} (fix: check ROOT and the output path)", file=sys.stderr)
        return 2
    totals = manifest["totals"]
    print(f"rentcheck: wrote {output} ({totals['files']} files, {totals['bytes']} bytes)")
    for item in manifest["leftovers"]:
        print(
            f"rentcheck: warning: leftover {item['path']!r} recorded, not hashed: {item['reason']}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

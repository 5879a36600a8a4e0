"""The per-file pass: open safely, read once, hash, validate, compare with the manifest."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from rentcheck.model import Finding, Severity
from rentcheck.pull.deep import DEEP_KINDS, deep_check
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.formats.dispatch import Choice, choose_validator
from rentcheck.pull.formats.legacy import PickleStreamValidator
from rentcheck.pull.formats.policy import VerifyPolicy
from rentcheck.pull.formats.safetensors import MAX_HEADER_BYTES
from rentcheck.pull.formats.text import TextValidator
from rentcheck.pull.formats.torchzip import MAX_PICKLE_BYTES, TorchZipValidator
from rentcheck.pull.manifest import ManifestEntry
from rentcheck.pull.readpipe import INLINE_CHUNK, RING, BufferPool, Hasher
from rentcheck.pull.rules import (
    DEEP_LOAD_FAILED,
    DIGEST_MISMATCH,
    FILE_UNREADABLE,
    NON_FINITE_NOTE,
    NON_FINITE_TENSOR,
    RULES_BY_CODE,
    SIZE_MISMATCH,
)
from rentcheck.pull.walk import LocalFile

__all__ = [
    "CHUNK_SIZE",
    "CheckOptions",
    "Expected",
    "FileVerdict",
    "Outcome",
    "check_one",
    "to_finding",
    "verify_file",
]

CHUNK_SIZE = 8 * 1024 * 1024
DEFAULT_POLICY = VerifyPolicy()
_O_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


OnRead = Callable[[int], None] | None  # told the byte count of each read
#: ``progress(nbytes, files)``: bytes just read, and 1 once a file is done
OnProgress = Callable[..., None]


class FileVerdict(NamedTuple):  # a tuple: one per file, at a fraction of a dataclass's cost
    path: str
    size: int
    mtime_ns: int
    sha256: str | None  # None when the file could not be read to the end
    kind: str  # safetensors | torch-zip | torch-legacy | pickle | json | jsonl | yaml | data | ...
    tensors: int
    errors: int  # error-level findings for this file


class Expected(NamedTuple):
    """What the manifest says of a file: its size and its raw 32-byte SHA-256."""

    size: int
    sha256: bytes | bytearray  # a slice of the roster's digest column

    @classmethod
    def of(cls, entry: ManifestEntry) -> Expected:
        return cls(entry.size, bytes.fromhex(entry.sha256))


@dataclass(frozen=True)
class CheckOptions:
    deep: bool
    allowed: tuple[str, ...]
    chunk: int
    max_header: int = MAX_HEADER_BYTES  # safetensors header cap
    progress: OnProgress | None = None  # (bytes read, files finished), after each read
    pool: BufferPool | None = None  # read buffers shared by the workers of one run
    pipeline: bool = True  # large files: hash on a helper thread (see readpipe)
    policy: VerifyPolicy = DEFAULT_POLICY  # presets, per-file policies, NaN/Inf by path


@dataclass(slots=True)
class Outcome:
    verdict: FileVerdict
    issues: list[Issue]
    tensor_names: frozenset[str] = frozenset()
    index: object = None
    read: int = 0
    digest: bytes = b""  # the raw SHA-256 of what was read (empty: not read to the end)


def to_finding(issue: Issue, path: str | None) -> Finding:
    return RULES_BY_CODE[issue.code].finding(issue.message, path=path, details=dict(issue.details))


Feed = Callable[[memoryview], None] | None


def _inline(f: Any, hasher: Hasher, buf: bytearray, n: int, *, feed: Feed, progress: OnRead) -> int:
    """Small reads into one cache-resident buffer; every pass right after the read."""
    sha, total = hasher.sha, 0
    with memoryview(buf) as view:
        while n:
            piece = view[:n]
            if feed is not None:
                feed(piece)
            sha.update(piece)
            piece.release()
            total += n
            if progress is not None:
                progress(n)
            n = f.readinto(buf)
    hasher.free.put(buf)
    return total


def _pipelined(
    f: Any, hasher: Hasher, buf: bytearray, n: int, *, feed: Feed, progress: OnRead
) -> int:
    """Large reads; the hash of chunk k on the helper thread while chunk k+1 is validated."""
    total = 0
    while n:
        if feed is not None:
            with memoryview(buf) as view, view[:n] as piece:
                feed(piece)
        hasher.submit(buf, n)
        total += n
        if progress is not None:
            progress(n)
        buf = hasher.free.get()
        n = f.readinto(buf)
    hasher.free.put(buf)
    return total


def read_pass(lf: LocalFile, opts: CheckOptions) -> Outcome:
    """Open (safely), read once, hash and validate.

    A small file is read first and ``fstat``-ed after: it is what was listed (the same
    regular file, size and mtime as the walk's ``lstat``) or it is not judged, and a read
    never goes past one buffer. A larger file is ``fstat``-ed before it is read, since a
    device or FIFO in its place could be read from forever.
    """
    try:
        fd = os.open(lf.path, _O_FLAGS)
    except OSError as exc:
        return _unreadable(lf, f"cannot open: {exc.strerror}")
    try:
        if lf.size <= min(opts.chunk, INLINE_CHUNK):
            return _read_small(lf, fd, opts)
        st = os.fstat(fd)
        if not _is_listed(lf, st):
            return _unreadable(lf, _REPLACED)
        return _read_chunked(lf, fd, st, opts)
    finally:
        os.close(fd)


_REPLACED = "replaced by something else after it was listed; not read"


def _is_listed(lf: LocalFile, st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_ino == lf.ino and st.st_dev == lf.dev


_SMALL = threading.local()


def _small_buffer() -> bytearray:
    """This thread's buffer for small files: allocated once per thread, not per file."""
    buf: bytearray | None = getattr(_SMALL, "buf", None)
    if buf is None:
        buf = _SMALL.buf = bytearray(INLINE_CHUNK)
    return buf


def _read_small(lf: LocalFile, fd: int, opts: CheckOptions) -> Outcome:
    """A file that fits one buffer: one read sized to it, every pass over that one piece.

    No pooled buffers, no hasher object, no file object: most of a small file's cost was
    that bookkeeping, not the bytes. The ``fstat`` after the read settles that the bytes are
    the listed file's, whole: same inode, size and mtime as listed, and no more than read.
    """
    buf = _small_buffer()
    try:
        n = os.readv(fd, [buf]) if lf.size else 0
        after = os.fstat(fd)
    except OSError as exc:
        return _unreadable(lf, f"read failed: {exc.strerror}")
    if not _is_listed(lf, after):
        return _unreadable(lf, _REPLACED)
    with memoryview(buf) as view, view[:n] as piece:
        choice = _choose(lf, lf.size, bytes(piece[:512]), fd, opts)
        if n and choice.validator is not None:
            choice.validator.feed(piece)
        sha = hashlib.sha256(piece)
    if opts.progress is not None:
        opts.progress(n, 1)
    listed = (lf.size, lf.mtime_ns)
    return _outcome(lf, listed, after, n, sha.digest(), choice=choice, policy=opts.policy)


def _choose(lf: LocalFile, size: int, head: bytes, fd: int, opts: CheckOptions) -> Choice:
    allowed, full_pickle = opts.policy.for_file(lf.rel)
    return choose_validator(
        lf.rel,
        size,
        head,
        lambda off, k: os.pread(fd, k, off),
        extra_allowed=(*opts.allowed, *allowed) if allowed else opts.allowed,
        max_header=opts.max_header,
        full_pickle=full_pickle,
    )


def _by_path(issues: list[Issue], policy: VerifyPolicy) -> list[Issue]:
    """NaN/Inf in a tensor the policy calls a note (a callback's +-inf sentinel) -> RC531."""
    if not any(i.code == NON_FINITE_TENSOR for i in issues):
        return issues
    out = []
    for issue in issues:
        tensor = issue.details.get("tensor")
        note = (
            issue.code == NON_FINITE_TENSOR
            and isinstance(tensor, str)
            and policy.nonfinite_action(tensor) == "note"
        )
        if note:
            message = f"{issue.message} (a callback/loop value, not a weight)"
            out.append(Issue(NON_FINITE_NOTE, message, issue.details))
        else:
            out.append(issue)
    return out


def _read_chunked(lf: LocalFile, fd: int, st: os.stat_result, opts: CheckOptions) -> Outcome:
    """Larger files: chunked reads, inline or with the hash on a helper thread."""
    f = os.fdopen(fd, "rb", buffering=0, closefd=False)
    threaded = opts.pipeline and st.st_size > 2 * opts.chunk
    pool = opts.pool or BufferPool()
    if threaded:
        hasher = Hasher(pool.take(RING, opts.chunk), threaded=True)
    else:
        hasher = Hasher(pool.take(1, min(opts.chunk, INLINE_CHUNK)), threaded=False)
    total = 0
    try:
        first = hasher.free.get()
        n = f.readinto(first)
        choice = _choose(lf, st.st_size, bytes(first[: min(n, 512)]), fd, opts)
        feed = choice.validator.feed if choice.validator is not None else None
        progress = None if opts.progress is None else functools.partial(opts.progress, files=0)
        if threaded:
            total = _pipelined(f, hasher, first, n, feed=feed, progress=progress)
        else:
            total = _inline(f, hasher, first, n, feed=feed, progress=progress)
        after = os.fstat(fd)
    except OSError as exc:
        return _unreadable(lf, f"read failed: {exc.strerror}")
    finally:
        pool.give(hasher.close())
        f.close()
    if opts.progress is not None:
        opts.progress(0, 1)
    digest = hasher.sha.digest()
    listed = (lf.size, lf.mtime_ns)  # changed since it was listed: changed under the verify
    return _outcome(lf, listed, after, total, digest, choice=choice, policy=opts.policy)


def _outcome(
    lf: LocalFile,
    before: tuple[int, int],
    after: os.stat_result,
    total: int,
    digest: bytes,
    *,
    choice: Choice,
    policy: VerifyPolicy,
) -> Outcome:
    """The verdict of ``total`` bytes read with ``digest``; ``before`` is the (size, mtime)
    the file had before the read, ``after`` its ``fstat`` once read."""
    size, mtime_ns = before
    validator = choice.validator
    issues = [] if validator is None else _by_path(validator.finish(), policy)
    if after.st_size != size or after.st_mtime_ns != mtime_ns or total != size:
        issues.append(Issue(FILE_UNREADABLE, "changed while it was being verified"))
    tensors = () if validator is None else validator.tensors
    verdict = FileVerdict(lf.rel, total, mtime_ns, digest.hex(), choice.kind, len(tensors), 0)
    out = Outcome(verdict, issues, read=total, digest=digest)
    if validator is None:
        return out
    if isinstance(validator, (TorchZipValidator, PickleStreamValidator)):
        out.tensor_names = validator.tensor_paths
    elif choice.kind == "safetensors":
        out.tensor_names = frozenset(t.name for t in tensors)
    if isinstance(validator, TextValidator):
        out.index = validator.value
    return out


def _unreadable(lf: LocalFile, why: str) -> Outcome:
    verdict = FileVerdict(lf.rel, lf.size, lf.mtime_ns, None, "unread", 0, 0)
    return Outcome(verdict, [Issue(FILE_UNREADABLE, why)])


def _dcp_issues(lf: LocalFile) -> list[Issue]:
    """A DCP ``.metadata`` that passed its scan: the ``.distcp`` ranges it names."""
    from rentcheck.pull.formats.dcp import check_dcp

    try:
        fd = os.open(lf.path, _O_FLAGS)
        try:
            data = os.pread(fd, MAX_PICKLE_BYTES, 0)
        finally:
            os.close(fd)
    except OSError as exc:
        return [Issue(FILE_UNREADABLE, f"cannot read again: {exc.strerror}")]
    return check_dcp(os.path.dirname(lf.path), data)


def _errors(issues: list[Issue]) -> int:
    return sum(RULES_BY_CODE[i.code].default_severity >= Severity.ERROR for i in issues)


def check_one(lf: LocalFile, expected: Expected | None, opts: CheckOptions) -> Outcome:
    out = read_pass(lf, opts)
    v = out.verdict
    if v.kind == "pickle" and lf.rel.rsplit("/", 1)[-1] == ".metadata" and not _errors(out.issues):
        out.issues += _by_path(_dcp_issues(lf), opts.policy)
    if v.sha256 is None:
        if opts.progress is not None:  # not read: still one file done
            opts.progress(0, 1)
    elif expected is not None and (v.size != expected.size or out.digest != expected.sha256):
        out.issues.append(_mismatch(v, expected))
    errors = _errors(out.issues) if out.issues else 0
    if opts.deep and v.kind in DEEP_KINDS and not errors:
        allowed, _ = opts.policy.for_file(lf.rel)
        why = deep_check(lf.path, v.kind, (*opts.allowed, *allowed))
        if why is not None:
            out.issues.append(Issue(DEEP_LOAD_FAILED, why))
            errors += 1
    if errors:
        out.verdict = v._replace(errors=errors)
    return out


def _mismatch(v: FileVerdict, expected: Expected) -> Issue:
    if v.size != expected.size:
        message = f"{v.size} bytes, the manifest says {expected.size}"
        return Issue(SIZE_MISMATCH, message, {"expected": expected.size})
    want = expected.sha256.hex()
    return Issue(
        DIGEST_MISMATCH, f"sha256 {v.sha256} != {want} in the manifest", {"expected": want}
    )


def verify_file(
    path: str | os.PathLike[str],
    *,
    rel: str | None = None,
    expected: ManifestEntry | None = None,
    deep: bool = False,
    extra_allowed_globals: Iterable[str] = (),
    chunk_size: int = CHUNK_SIZE,
    max_header: int = MAX_HEADER_BYTES,
    policy: VerifyPolicy = DEFAULT_POLICY,
) -> tuple[FileVerdict, list[Finding]]:
    """Check one file (no roster): digest, structure, safety, NaN/Inf; findings use ``rel``.

    For the pytest plugin and ad-hoc checks of a single checkpoint. A symlink is resolved first.
    """
    real = os.path.realpath(os.fspath(path))
    name = rel if rel is not None else os.path.basename(real)
    try:
        st = os.stat(real)
    except OSError as exc:
        issue = Issue(FILE_UNREADABLE, f"cannot stat: {exc.strerror}")
        return FileVerdict(name, 0, 0, None, "unread", 0, 1), [to_finding(issue, name)]
    lf = LocalFile(name, real, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
    opts = CheckOptions(
        deep,
        tuple(extra_allowed_globals),
        max(64 * 1024, chunk_size),
        max_header,
        policy=policy,
    )
    out = check_one(lf, None if expected is None else Expected.of(expected), opts)
    return out.verdict, [to_finding(issue, name) for issue in out.issues]

"""The per-file pass: open safely, read once, hash, validate, compare with the manifest."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True)
class FileVerdict:
    path: str
    size: int
    mtime_ns: int
    sha256: str | None  # None when the file could not be read to the end
    kind: str  # safetensors | torch-zip | torch-legacy | pickle | json | jsonl | yaml | data | ...
    tensors: int
    errors: int  # error-level findings for this file


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
    """Open (safely), read once, hash and validate."""
    try:
        fd = os.open(lf.path, _O_FLAGS)
    except OSError as exc:
        return _unreadable(lf, f"cannot open: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (lf.dev, lf.ino):
            return _unreadable(lf, "replaced by something else after it was listed; not read")
        if st.st_size <= min(opts.chunk, INLINE_CHUNK):
            return _read_small(lf, fd, st, opts)
        return _read_chunked(lf, fd, st, opts)
    finally:
        os.close(fd)


_SMALL = threading.local()


def _small_buffer() -> bytearray:
    """This thread's buffer for small files: allocated once per thread, not per file."""
    buf: bytearray | None = getattr(_SMALL, "buf", None)
    if buf is None:
        buf = _SMALL.buf = bytearray(INLINE_CHUNK)
    return buf


def _read_small(lf: LocalFile, fd: int, st: os.stat_result, opts: CheckOptions) -> Outcome:
    """A file that fits one buffer: one read sized to it, every pass over that one piece.

    No pooled buffers, no hasher object, no file object: most of a small file's cost was
    that bookkeeping, not the bytes. A file that grew or changed after the ``fstat`` is caught
    by the count read and the ``fstat`` after.
    """
    buf = _small_buffer()
    try:
        n = os.readv(fd, [buf]) if st.st_size else 0
        after = os.fstat(fd)
    except OSError as exc:
        return _unreadable(lf, f"read failed: {exc.strerror}")
    with memoryview(buf) as view, view[:n] as piece:
        choice = _choose(lf, st, bytes(piece[:512]), fd, opts)
        if n and choice.validator is not None:
            choice.validator.feed(piece)
        digest = hashlib.sha256(piece).hexdigest()
    if opts.progress is not None:
        opts.progress(n, 1)
    return _outcome(lf, st, after, n, digest=digest, choice=choice, policy=opts.policy)


def _choose(lf: LocalFile, st: os.stat_result, head: bytes, fd: int, opts: CheckOptions) -> Choice:
    allowed, full_pickle = opts.policy.for_file(lf.rel)
    return choose_validator(
        lf.rel,
        st.st_size,
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
        choice = _choose(lf, st, bytes(first[: min(n, 512)]), fd, opts)
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
    return _outcome(
        lf, st, after, total, digest=hasher.sha.hexdigest(), choice=choice, policy=opts.policy
    )


def _outcome(
    lf: LocalFile,
    st: os.stat_result,
    after: os.stat_result,
    total: int,
    *,
    digest: str,
    choice: Choice,
    policy: VerifyPolicy,
) -> Outcome:
    issues = choice.validator.finish() if choice.validator is not None else []
    issues = _by_path(issues, policy)
    if (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns) or total != st.st_size:
        issues.append(Issue(FILE_UNREADABLE, "changed while it was being verified"))
    tensors = choice.validator.tensors if choice.validator is not None else ()
    verdict = FileVerdict(lf.rel, total, st.st_mtime_ns, digest, choice.kind, len(tensors), 0)
    out = Outcome(verdict, issues, read=total)
    if isinstance(choice.validator, (TorchZipValidator, PickleStreamValidator)):
        out.tensor_names = choice.validator.tensor_paths
    elif choice.kind == "safetensors":
        out.tensor_names = frozenset(t.name for t in tensors)
    if isinstance(choice.validator, TextValidator):
        out.index = choice.validator.value
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


def check_one(lf: LocalFile, expected: ManifestEntry | None, opts: CheckOptions) -> Outcome:
    out = read_pass(lf, opts)
    v = out.verdict
    if v.kind == "pickle" and lf.rel.rsplit("/", 1)[-1] == ".metadata" and not _errors(out.issues):
        out.issues += _by_path(_dcp_issues(lf), opts.policy)
    if v.sha256 is None and opts.progress is not None:  # not read: still one file done
        opts.progress(0, 1)
    if expected is not None and v.sha256 is not None:
        if v.size != expected.size:
            out.issues.append(
                Issue(
                    SIZE_MISMATCH,
                    f"{v.size} bytes, the manifest says {expected.size}",
                    {"expected": expected.size},
                )
            )
        elif v.sha256 != expected.sha256:
            out.issues.append(
                Issue(
                    DIGEST_MISMATCH,
                    f"sha256 {v.sha256} != {expected.sha256} in the manifest",
                    {"expected": expected.sha256},
                )
            )
    errors = (
        sum(RULES_BY_CODE[i.code].default_severity >= Severity.ERROR for i in out.issues)
        if out.issues
        else 0
    )
    if opts.deep and v.kind in DEEP_KINDS and not errors:
        allowed, _ = opts.policy.for_file(lf.rel)
        why = deep_check(lf.path, v.kind, (*opts.allowed, *allowed))
        if why is not None:
            out.issues.append(Issue(DEEP_LOAD_FAILED, why))
            errors += 1
    if errors:
        out.verdict = FileVerdict(v.path, v.size, v.mtime_ns, v.sha256, v.kind, v.tensors, errors)
    return out


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
    out = check_one(lf, expected, opts)
    return out.verdict, [to_finding(issue, name) for issue in out.issues]

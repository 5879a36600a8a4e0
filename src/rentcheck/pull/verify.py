"""Verify a pulled directory: roster, digests, structure, pickle safety and NaN/Inf, one read.

Each file is read exactly once, sequentially, in ``chunk_size`` pieces into one reused buffer;
every piece goes to SHA-256 and to the file's format validator. The tree is walked in sorted
order and joined with the sorted roster as both stream (``rosterjoin``); small files are read
in the walking thread, large ones on worker threads meanwhile (``bigfiles``: hashlib, zlib and
numpy release the GIL). What is kept per file is its verdict in a few bytes (``verdicts``) and
its findings, so memory is the roster's plus a little, whatever the file count. Containment is
settled before anything is opened: the tree is listed without following symlinks, a symlink is
opened only when its resolved target is a regular file inside the root, and every open uses
``O_NOFOLLOW`` and is checked against the (device, inode) that was vetted. Nothing here prints.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rentcheck.errors import FormatError
from rentcheck.model import Finding, Severity
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.bigfiles import BigFiles
from rentcheck.pull.crosscheck import SHARD_KINDS, check_index
from rentcheck.pull.filecheck import (
    CHUNK_SIZE,
    CheckOptions,
    FileVerdict,
    Outcome,
    check_one,
    to_finding,
    verify_file,
)
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.formats.policy import VerifyPolicy
from rentcheck.pull.formats.safetensors import MAX_HEADER_BYTES
from rentcheck.pull.manifest import Manifest, load_manifest, normalize_path
from rentcheck.pull.nogc import collector_paused
from rentcheck.pull.readpipe import INLINE_CHUNK, BufferPool
from rentcheck.pull.rosterjoin import RosterJoin
from rentcheck.pull.rules import EMPTY_PULL, MANIFEST_INVALID
from rentcheck.pull.smallpool import BATCH, Job, SmallFilePool
from rentcheck.pull.verdicts import Verdicts
from rentcheck.pull.walk import iter_tree

__all__ = [
    "CHUNK_SIZE",
    "FileVerdict",
    "Progress",
    "VerifyResult",
    "verify_file",
    "verify_pull",
    "verify_tree",
]


#: Roster entries from which small files are checked in forked workers: below it, starting
#: them (a fork each, a few ms) costs more than the second core saves.
POOL_MIN_FILES = 4096


class Progress(Protocol):
    """Told the work ahead once, then every read and every finished file (from several
    threads at once): ``advance(nbytes, files)`` with ``files`` 1 when a file is done."""

    def start(self, total_bytes: int, files: int) -> None: ...

    def advance(self, nbytes: int, files: int = 0) -> None: ...


@dataclass(frozen=True)
class VerifyResult:
    root: str
    manifest: Manifest | None
    findings: tuple[Finding, ...]
    files: Sequence[FileVerdict]  # in path order; a ``Verdicts`` (columns) from verify_tree
    deep: bool = False
    extra_allowed_globals: tuple[str, ...] = ()
    bytes_read: int = 0

    @property
    def ok(self) -> bool:
        """No error-level finding."""
        return not any(f.severity >= Severity.ERROR for f in self.findings)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def every_listed_file_read(self) -> bool:
        """A manifest, at least one file in it, and every one of its files read to the end."""
        if self.manifest is None or not self.manifest.files:
            return False
        if isinstance(self.files, Verdicts):
            return self.files.listed_unread() == 0
        read = {normalize_path(v.path) for v in self.files if v.sha256 is not None}
        return all(normalize_path(p) in read for p in self.manifest.files.paths)


def verify_tree(
    local_root: str | os.PathLike[str],
    manifest: Manifest | None,
    *,
    jobs: int | None = None,
    deep: bool = False,
    expected_run_id: str | None = None,
    extra_allowed_globals: Iterable[str] = (),
    chunk_size: int = CHUNK_SIZE,
    max_header: int = MAX_HEADER_BYTES,
    progress: Progress | None = None,
    policy: VerifyPolicy | None = None,
    pool_min_files: int = POOL_MIN_FILES,
) -> VerifyResult:
    """Check ``local_root`` against ``manifest`` (or only structure/safety when it is None).

    ``max_header`` caps a safetensors header; ``progress`` hears the bytes as they are read.
    The tree is walked in sorted order and matched against the roster as it streams (see
    ``rosterjoin``); each file is checked as the walk reaches it; what is kept per file is a
    few bytes of verdict (``Verdicts``) and the findings. A roster of ``pool_min_files`` or
    more has its small files checked in forked workers (``smallpool``), when ``jobs`` allows.
    """
    with collector_paused():
        return _verify_tree(
            os.fspath(local_root),
            manifest,
            jobs=jobs,
            expected_run_id=expected_run_id,
            opts=CheckOptions(
                deep,
                tuple(extra_allowed_globals),
                max(64 * 1024, chunk_size),
                max_header,
                None if progress is None else progress.advance,
                BufferPool(),
                policy=policy or VerifyPolicy(),
            ),
            progress=progress,
            pool_min_files=pool_min_files,
        )


def _verify_tree(
    root: str,
    manifest: Manifest | None,
    *,
    jobs: int | None,
    expected_run_id: str | None,
    opts: CheckOptions,
    progress: Progress | None,
    pool_min_files: int,
) -> VerifyResult:
    join = RosterJoin(manifest, expected_run_id)
    if progress is not None:
        files, nbytes = join.expected_work(root)
        progress.start(nbytes, files)
    sink = _Sink(Verdicts(None if manifest is None else manifest.files))
    workers = max(1, jobs or min(4, os.cpu_count() or 1))
    small_limit = min(opts.chunk, INLINE_CHUNK)
    inline = dataclasses.replace(opts, pipeline=True) if workers == 1 else opts
    pool = None  # forked before any thread starts: the large-file threads come after
    if workers > 1 and manifest is not None and len(manifest.files) >= pool_min_files:
        pool = SmallFilePool(workers, opts, sink.take)
        if not len(pool):
            pool = None  # the system allowed no fork: checked inline
    big = None if workers == 1 else BigFiles(workers, opts, sink.take)
    batch: list[Job] = []
    try:
        for lf, at in join.stream(iter_tree(root)):
            if big is not None and lf.size > small_limit:
                big.put(lf, at, join.expected(at))
            elif pool is not None:
                batch.append((lf, at, join.expected(at)))
                if len(batch) == BATCH:
                    pool.put(batch)
                    batch = []
            else:
                sink.take(check_one(lf, join.expected(at), inline), at)
        if pool is not None:
            if batch:
                pool.put(batch)
            pool.close()
    except BaseException:
        if pool is not None:
            pool.close(abandon=True)
        if big is not None:
            big.close(abandon=True)
        raise
    if big is not None:
        big.close()
    findings = join.findings + sink.findings
    if manifest is None and not len(sink.verdicts):
        findings.append(to_finding(Issue(EMPTY_PULL, "the directory holds no files"), None))
    for path, index in sink.indexes:
        issues = check_index(path, index, sink.shards)
        findings += [to_finding(issue, path) for issue in issues]
    return VerifyResult(
        root=root,
        manifest=manifest,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        files=sink.verdicts,
        deep=opts.deep,
        extra_allowed_globals=opts.allowed,
        bytes_read=sink.bytes_read,
    )


class _Sink:
    """What is kept of each file's outcome: its verdict, its findings, and what the
    safetensors index cross-check needs (tensor names of sound shards, parsed index files)."""

    def __init__(self, verdicts: Verdicts) -> None:
        self.verdicts = verdicts
        self.findings: list[Finding] = []
        self.shards: dict[str, frozenset[str]] = {}
        self.indexes: list[tuple[str, object]] = []
        self.bytes_read = 0
        self._lock = threading.Lock()

    def take(self, out: Outcome, at: int | None) -> None:
        v = out.verdict
        self.verdicts.record(v, at, out.digest)
        with self._lock:
            self.bytes_read += out.read
            if out.issues:
                self.findings += [to_finding(issue, v.path) for issue in out.issues]
            if v.kind in SHARD_KINDS and v.errors == 0:
                self.shards[v.path] = out.tensor_names
            if out.index is not None:
                self.indexes.append((v.path, out.index))


def verify_pull(
    local_root: str | os.PathLike[str],
    manifest_path: str | os.PathLike[str] | None = None,
    *,
    jobs: int | None = None,
    deep: bool = False,
    expected_run_id: str | None = None,
    extra_allowed_globals: Iterable[str] = (),
    chunk_size: int = CHUNK_SIZE,
    max_header: int = MAX_HEADER_BYTES,
    progress: Progress | None = None,
    policy: VerifyPolicy | None = None,
) -> VerifyResult:
    """Load ``manifest_path`` (default ``LOCAL_ROOT/PULL_MANIFEST.json``) and verify.

    A missing or invalid manifest is an RC501 finding; the files are then still checked for
    structure, safety and NaN/Inf, but nothing can be certified.
    """
    path = (
        Path(local_root) / builder.MANIFEST_NAME if manifest_path is None else Path(manifest_path)
    )
    manifest: Manifest | None = None
    problem: FormatError | None = None
    try:
        manifest = load_manifest(path)
    except FormatError as exc:
        problem = exc
    result = verify_tree(
        local_root,
        manifest,
        jobs=jobs,
        deep=deep,
        expected_run_id=expected_run_id,
        extra_allowed_globals=extra_allowed_globals,
        chunk_size=chunk_size,
        max_header=max_header,
        progress=progress,
        policy=policy,
    )
    if problem is None:
        return result
    shown = os.fspath(path)
    if os.path.dirname(os.path.abspath(shown)) == os.path.abspath(os.fspath(local_root)):
        shown = os.path.basename(shown)  # findings are relative to the pulled root
    bad = to_finding(Issue(MANIFEST_INVALID, problem.message), shown)
    findings = tuple(sorted((*result.findings, bad), key=Finding.sort_key))
    return VerifyResult(
        result.root,
        None,
        findings,
        result.files,
        result.deep,
        result.extra_allowed_globals,
        result.bytes_read,
    )

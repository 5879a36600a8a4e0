"""Verify a pulled directory: roster, digests, structure, pickle safety and NaN/Inf, one read.

Each file is read exactly once, sequentially, in ``chunk_size`` pieces into one reused buffer;
every piece goes to SHA-256 and to the file's format validator. Files are spread over a thread
pool (hashlib, zlib and numpy release the GIL). Containment is settled before anything is
opened: the tree is listed without following symlinks, a symlink is opened only when its
resolved target is a regular file inside the root, and every open uses ``O_NOFOLLOW`` and is
checked against the (device, inode) that was vetted. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rentcheck.errors import FormatError
from rentcheck.model import Finding, Severity
from rentcheck.pull import manifest_builder as builder
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
from rentcheck.pull.rules import (
    EMPTY_PULL,
    LEFTOVER_PARTIAL,
    MANIFEST_INVALID,
    MISSING_FILE,
    RUN_ID_MISMATCH,
    UNEXPECTED_FILE,
)
from rentcheck.pull.walk import LocalFile, scan_tree

__all__ = [
    "CHUNK_SIZE",
    "FileVerdict",
    "Progress",
    "VerifyResult",
    "verify_file",
    "verify_pull",
    "verify_tree",
]


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
    files: tuple[FileVerdict, ...]
    deep: bool = False
    extra_allowed_globals: tuple[str, ...] = ()
    bytes_read: int = 0

    @property
    def ok(self) -> bool:
        """No error-level finding."""
        return not any(f.severity >= Severity.ERROR for f in self.findings)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}


def _roster(
    manifest: Manifest | None, local: dict[str, LocalFile], problems: set[str], run_id: str | None
) -> tuple[list[Finding], dict[str, int | None]]:
    """Manifest-level findings and, for each local file to read, its manifest entry."""
    findings: list[Finding] = []
    todo: dict[str, int | None] = {}  # position in the roster: entries are made when read
    name = builder.MANIFEST_NAME
    if manifest is None:
        for rel in local:
            reason = builder.leftover_reason(rel)
            if reason:
                findings.append(to_finding(Issue(LEFTOVER_PARTIAL, f"leftover: {reason}"), rel))
            todo[rel] = None
        return findings, todo
    if run_id is not None and manifest.run_id != run_id:
        findings.append(
            to_finding(
                Issue(
                    RUN_ID_MISMATCH, f"manifest is for run {manifest.run_id!r}, expected {run_id!r}"
                ),
                name,
            )
        )
    if not manifest.files:
        findings.append(to_finding(Issue(EMPTY_PULL, "the manifest lists no files"), name))
    for left in manifest.leftovers:
        msg = f"left over on the box ({left.reason}, {left.size} bytes); not hashed, not pulled"
        findings.append(to_finding(Issue(LEFTOVER_PARTIAL, msg), left.path))
    by_key: dict[str, str] = {rel: rel for rel in local if rel.isascii()}  # NFC already
    others = sorted(
        (r for r in local if not r.isascii()), key=lambda r: (normalize_path(r) != r, r)
    )
    for rel in others:  # NFC spellings first
        key = normalize_path(rel)
        if key in by_key:  # two local names that are one name after NFC: check both
            msg = f"same name as {by_key[key]!r} after Unicode (NFC) normalisation"
            findings.append(to_finding(Issue(UNEXPECTED_FILE, msg), rel))
            todo[rel] = None
        else:
            by_key[key] = rel
    expected = manifest.files
    for i, path in enumerate(expected.paths):  # entries are made for the files found only
        key = normalize_path(path)
        match = by_key.get(key)
        if match is not None:
            todo[match] = i
        elif path not in problems and key not in problems:
            size = expected[i].size
            findings.append(
                to_finding(
                    Issue(MISSING_FILE, f"listed in the manifest ({size} bytes) but not pulled"),
                    path,
                )
            )
    left_keys = {normalize_path(left.path) for left in manifest.leftovers}
    for key, rel in by_key.items():
        if rel not in todo and key not in left_keys:  # matched files are in todo
            reason = builder.leftover_reason(rel)
            issue = (
                Issue(LEFTOVER_PARTIAL, f"leftover: {reason}")
                if reason
                else Issue(UNEXPECTED_FILE, "not listed in the manifest")
            )
            findings.append(to_finding(issue, rel))
    return findings, todo


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
) -> VerifyResult:
    """Check ``local_root`` against ``manifest`` (or only structure/safety when it is None).

    ``max_header`` caps a safetensors header; ``progress`` hears the bytes as they are read.
    """
    with collector_paused():
        return _verify_tree(
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


def _verify_tree(
    local_root: str | os.PathLike[str],
    manifest: Manifest | None,
    *,
    jobs: int | None,
    deep: bool,
    expected_run_id: str | None,
    extra_allowed_globals: Iterable[str],
    chunk_size: int,
    max_header: int,
    progress: Progress | None,
    policy: VerifyPolicy | None,
) -> VerifyResult:
    root = os.fspath(local_root)
    local, problem_list = scan_tree(root)
    findings = [to_finding(issue, rel) for rel, issue in problem_list]
    roster, todo = _roster(manifest, local, {r for r, _ in problem_list}, expected_run_id)
    findings += roster
    if manifest is None and not local:
        findings.append(to_finding(Issue(EMPTY_PULL, "the directory holds no files"), None))
    chunk = max(64 * 1024, chunk_size)
    workers = max(1, jobs or min(4, os.cpu_count() or 1))
    small_limit = min(chunk, INLINE_CHUNK)
    big = sorted((r for r in todo if local[r].size > small_limit), key=lambda r: -local[r].size)
    small = [r for r in todo if local[r].size <= small_limit]
    opts = CheckOptions(
        deep,
        tuple(extra_allowed_globals),
        chunk,
        max_header,
        None if progress is None else progress.advance,
        BufferPool(),
        # Enough files to keep every worker busy: read inline, cache-friendly; otherwise
        # give each large file a helper thread for its hash (see readpipe).
        pipeline=workers == 1 or len(big) < 2 * workers,
        policy=policy or VerifyPolicy(),
    )
    if progress is not None:
        progress.start(sum(local[rel].size for rel in todo), len(todo))
    files = manifest.files if manifest is not None else None

    def check(rel: str) -> Outcome:
        at = todo[rel]
        return check_one(local[rel], None if at is None or files is None else files[at], opts)

    outcomes = _check_all(big, small, workers, check)
    shards: dict[str, frozenset[str]] = {}
    for out in outcomes:
        findings += [to_finding(issue, out.verdict.path) for issue in out.issues]
        if out.verdict.kind in SHARD_KINDS and out.verdict.errors == 0:
            shards[out.verdict.path] = out.tensor_names
    for out in outcomes:
        if out.index is not None:
            issues = check_index(out.verdict.path, out.index, shards)
            findings += [to_finding(issue, out.verdict.path) for issue in issues]
    return VerifyResult(
        root=root,
        manifest=manifest,
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        files=tuple(sorted((o.verdict for o in outcomes), key=lambda v: v.path)),
        deep=deep,
        extra_allowed_globals=opts.allowed,
        bytes_read=sum(o.read for o in outcomes),
    )


def _check_all(
    big: list[str], small: list[str], workers: int, check: Callable[[str], Outcome]
) -> list[Outcome]:
    """Large files (largest first) on ``workers`` threads; small files one after another in
    this thread meanwhile, in one batch: handing a 4 KiB file to a thread cost more than
    reading it (a future, two context switches and the GIL ping-pong per file)."""
    if workers == 1 or not big:
        return [check(rel) for rel in big] + [check(rel) for rel in small]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(check, rel) for rel in big]
        done = [check(rel) for rel in small]
        return [f.result() for f in futures] + done


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

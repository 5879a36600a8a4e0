"""``rentcheck pull``'s work before the verify: roster on the box, safety, transfer, re-check.

1. The roster is built on the box (``remote_roster.build_roster``) and parsed as any
   manifest is: ``..``, absolute paths, duplicates are refused there.
2. Every path's local place is checked (``transfer.unsafe_paths``): nothing is written, not
   even LOCAL_ROOT itself, when one is refused.
3. The files come over (``transfer.pull_files``: resume, retries, deadline).
4. The box is re-read (sizes, mtimes): a file that changed while it was pulled is hashed on
   the box again and pulled whole again, up to ``ROUNDS`` times; then it is reported.
5. LOCAL_ROOT/PULL_MANIFEST.json is written (the box's bytes, or the roster with the
   re-hashed entries), atomically. The caller verifies against it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

from rentcheck.errors import FormatError, RemoteError
from rentcheck.model import Finding
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.manifest import Manifest, Roster, load_manifest
from rentcheck.pull.remote_roster import (
    BoxRoster,
    BoxTree,
    build_roster,
    hash_files,
    stat_roster,
)
from rentcheck.pull.transfer import Attempt, Endpoint, Progress, Want, pull_files, unsafe_paths
from rentcheck.pull.transfer_rules import (
    CHANGED_DURING_PULL,
    LOCAL_DISK_FULL,
    PULL_INCOMPLETE,
    ROSTER_UNSAFE,
    TRANSFER_RULES_BY_CODE,
)

__all__ = ["PullOutcome", "PullRequest", "pull_to"]

ROUNDS = 3  # re-pulls of files that changed on the box while they were pulled


@dataclass(frozen=True)
class PullRequest:
    host: str
    remote_root: str
    local_root: str
    method: str = "auto"  # auto | rsync | ranged
    deadline_s: float = 6 * 3600.0
    write_manifest: bool = False
    run_id: str | None = None
    bwlimit_kib: int | None = None
    ssh_config: str | None = None
    connect_timeout: float | None = None
    timeout: float = 900.0  # for one remote roster step


@dataclass
class PullOutcome:
    request: PullRequest
    findings: list[Finding] = field(default_factory=list)
    manifest: Manifest | None = None
    manifest_path: str | None = None
    box_root: str | None = None
    method: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    repulled: list[str] = field(default_factory=list)
    refetched: list[str] = field(default_factory=list)  # stale here: fetched again whole
    seconds: float = 0.0
    box_peak_rss_kib: int | None = None  # the peak of the programs it ran on the box

    @property
    def transferred(self) -> bool:
        return self.manifest_path is not None

    def to_dict(self) -> dict[str, Any]:
        total = self.manifest.total_bytes if self.manifest else 0
        return {
            "host": self.request.host,
            "remote_root": self.request.remote_root,
            "box_root": self.box_root,
            "local_root": os.path.abspath(self.request.local_root),
            "method": self.method,
            "manifest": self.manifest_path,
            "run_id": self.manifest.run_id if self.manifest else None,
            "files": len(self.manifest.files) if self.manifest else 0,
            "bytes": total,
            "bytes_sent": sum(a.bytes for a in self.attempts),
            "attempts": [a.to_dict() for a in self.attempts],
            "repulled": self.repulled,
            "refetched": self.refetched,
            "seconds": round(self.seconds, 3),
            "box_peak_rss_kib": self.box_peak_rss_kib,
        }


def _finding(code: str, message: str, path: str | None = None, **details: Any) -> Finding:
    return TRANSFER_RULES_BY_CODE[code].finding(message, path=path, details=details or None)


def _choose(method: str, host: str, box_has_rsync: bool) -> str:
    if method != "auto":
        return method
    here = shutil.which("rsync") is not None and (host == "local" or shutil.which("ssh"))
    return "rsync" if here and box_has_rsync else "ranged"


def pull_to(request: PullRequest, progress: Progress | None = None) -> PullOutcome:
    from rentcheck.box.transport import close_host, open_box

    started = time.monotonic()
    outcome = PullOutcome(request)
    local_root = os.path.abspath(request.local_root)
    # The roster's exact bytes as they stream in (parsed into columns meanwhile): written
    # into LOCAL_ROOT only once nothing is refused, never held whole here.
    kept = tempfile.TemporaryFile(prefix="rentcheck-roster-")  # noqa: SIM115 - closed below
    try:
        box = open_box(
            request.host, ssh_config=request.ssh_config, connect_timeout=request.connect_timeout
        )
        try:
            roster = build_roster(
                box,
                request.remote_root,
                run_id=request.run_id,
                write=request.write_manifest,
                timeout=request.timeout,
                keep=kept,
            )
        except FormatError as exc:
            message = f"the box's roster was refused, nothing was pulled: {exc.message}"
            outcome.findings.append(_finding(ROSTER_UNSAFE, message))
            return outcome
        manifest = roster.manifest
        outcome.box_root = roster.root
        outcome.box_peak_rss_kib = roster.box_peak_rss_kib
        outcome.findings += _refusals(local_root, manifest)
        if outcome.findings:
            return outcome
        outcome.manifest = manifest
        endpoint = Endpoint(request.host, roster.root, request.ssh_config, request.connect_timeout)
        outcome.method = _choose(request.method, request.host, roster.rsync)
        os.makedirs(local_root, exist_ok=True)
        if progress is not None:
            progress.start(manifest.total_bytes, len(manifest.files))
        rehashed = _transfer_until_still(
            request,
            endpoint=endpoint,
            roster=roster,
            outcome=outcome,
            progress=progress,
            deadline=started + request.deadline_s,
        )
        if any(f.code in (PULL_INCOMPLETE, LOCAL_DISK_FULL) for f in outcome.findings):
            return outcome
        path = os.path.join(local_root, builder.MANIFEST_NAME)
        if rehashed:
            _write_rehashed(path, manifest, rehashed)
            outcome.manifest = load_manifest(path)
        else:
            kept.seek(0)
            with builder.AtomicFile(path) as out:
                while piece := kept.read(1 << 20):
                    out.write(piece)
        outcome.manifest_path = path
        return outcome
    finally:
        kept.close()
        outcome.seconds = time.monotonic() - started
        close_host(request.host, ssh_config=request.ssh_config)


def _write_rehashed(path: str, manifest: Manifest, rehashed: dict[str, dict[str, Any]]) -> None:
    """PULL_MANIFEST.json: the box's roster with the entries re-hashed after they changed
    during the pull in place, written a piece at a time (atomically)."""
    rest: dict[str, Any] = {
        "host": manifest.host,
        "leftovers": [
            {"path": left.path, "reason": left.reason, "size": left.size}
            for left in manifest.leftovers
        ],
        "run_id": manifest.run_id,
        "schema": manifest.schema,
    }
    if manifest.tool is not None:
        rest["tool"] = manifest.tool

    def entries() -> Iterator[dict[str, Any]]:
        for e in manifest.files:
            again = rehashed.get(e.path)
            if again is not None:
                yield again
                continue
            entry = {"path": e.path, "size": e.size, "mtime_ns": e.mtime_ns, "sha256": e.sha256}
            if e.blake3 is not None:
                entry["blake3"] = e.blake3
            yield entry

    created = manifest.created_at.isoformat(timespec="seconds")
    with builder.AtomicFile(path) as out:
        for piece in builder.render_pieces(created, entries(), rest):
            out.write(piece)


def _refusals(local_root: str, manifest: Manifest) -> list[Finding]:
    """RC540 for every roster path whose local place is unsafe, and for LOCAL_ROOT itself."""
    refused = unsafe_paths(local_root, manifest.files.paths)
    if os.path.islink(local_root) or (os.path.exists(local_root) and not os.path.isdir(local_root)):
        refused.insert(0, ("", "LOCAL_ROOT is a symlink or not a directory"))
    return [
        _finding(ROSTER_UNSAFE, f"refused before the first byte: {why}", rel or None)
        for rel, why in refused
    ]


def _transfer_until_still(
    request: PullRequest,
    *,
    endpoint: Endpoint,
    roster: BoxRoster,
    outcome: PullOutcome,
    progress: Progress | None,
    deadline: float,
) -> dict[str, dict[str, Any]]:
    """Transfer, re-read the box, re-pull what changed meanwhile (whole), up to ROUNDS times.
    The entries re-hashed on the box meanwhile, by path (empty: the box's roster held)."""

    from rentcheck.pull.stale import stale_local_files

    assert outcome.manifest is not None  # noqa: S101 - set by the caller
    rehashed: dict[str, dict[str, Any]] = {}
    local_root = os.path.abspath(request.local_root)
    files = outcome.manifest.files
    stale = stale_local_files(local_root, outcome.manifest)
    wants: Sequence[Want] = RosterWants(files, stale, whole=False)
    # Rewritten on the box since the local copy was made: no append repairs them.
    whole: Sequence[Want] = RosterWants(files, stale, whole=True)
    outcome.refetched = sorted(stale)
    short = _space_short(local_root, wants, whole)
    if short is not None:
        outcome.findings.append(_finding(LOCAL_DISK_FULL, short))
        return rehashed
    vanished: set[str] = set()
    for round_ in range(ROUNDS + 1):
        if wants and _transfer_failed(
            request,
            endpoint=endpoint,
            wants=wants,
            outcome=outcome,
            progress=progress,
            deadline=deadline,
            round_=round_,
        ):
            return rehashed
        if whole and _transfer_failed(
            request,
            endpoint=endpoint,
            wants=whole,
            outcome=outcome,
            progress=None,
            deadline=deadline,
            round_=round_ + 1,  # whole files, to a temp name, renamed when complete
        ):
            return rehashed
        whole = []
        box = endpoint.open()
        tree = _stat_with_retry(endpoint, box, request.timeout, files)
        if tree.box_peak_rss_kib is not None:
            outcome.box_peak_rss_kib = max(outcome.box_peak_rss_kib or 0, tree.box_peak_rss_kib)
        changed = [
            entry
            for entry in _entries(files, rehashed)
            if entry.path not in vanished and _moved(tree, entry)
        ]
        if not changed:
            return rehashed
        if round_ == ROUNDS:
            for e in changed:
                now = tree.files.get(e.path)
                after = (
                    "gone from the box"
                    if now is None
                    else f"{now.size} bytes, mtime_ns {now.mtime_ns} after"
                )
                message = (
                    f"changed on the box while it was pulled ({e.size} bytes, mtime_ns "
                    f"{e.mtime_ns} before; {after}), {ROUNDS} times"
                )
                outcome.findings.append(_finding(CHANGED_DURING_PULL, message, e.path))
            return rehashed
        hashed = hash_files(box, roster.root, [e.path for e in changed], timeout=request.timeout)
        rehashed.update(hashed.entries)
        vanished |= hashed.missing
        for path in sorted(hashed.missing):
            message = "vanished from the box while it was pulled"
            outcome.findings.append(_finding(CHANGED_DURING_PULL, message, path))
        for path, why in sorted(hashed.unreadable.items()):
            vanished.add(path)
            message = f"changed on the box while it was pulled, then could not be read: {why}"
            outcome.findings.append(_finding(CHANGED_DURING_PULL, message, path))
        # Files that changed even while they were hashed wait for the next round.
        wants = [Want(p, int(hashed.entries[p]["size"])) for p in sorted(hashed.entries)]
        outcome.repulled += sorted(hashed.entries)
        if not wants and not hashed.unstable:
            return rehashed
    return rehashed


def _transfer_failed(
    request: PullRequest,
    *,
    endpoint: Endpoint,
    wants: Sequence[Want],
    outcome: PullOutcome,
    progress: Progress | None,
    deadline: float,
    round_: int,
) -> bool:
    """One round's transfer (first: resume; later: whole files); True when it gave up.

    rsync brings its own connection; ours stays open meanwhile (idle, its keepalives keep it
    so), so the re-read of the box after the transfer needs no second login (a pull of many
    small files paid one: about a tenth of its time). A connection the box dropped meanwhile
    is opened again by ``_stat_with_retry``."""
    attempts = pull_files(
        endpoint,
        os.path.abspath(request.local_root),
        wants,
        method=outcome.method or "ranged",
        deadline=deadline,
        append=round_ == 0,
        bwlimit_kib=request.bwlimit_kib,
        progress=progress if round_ == 0 else None,
    )
    outcome.attempts += attempts
    if attempts[-1].error is None:
        return False
    if attempts[-1].disk_full:
        message = (
            f"LOCAL_ROOT's disk filled during the transfer ({attempts[-1].error}); "
            f"{_free_words(os.path.abspath(request.local_root))}: free space and run the pull "
            "again (what arrived is kept)"
        )
        outcome.findings.append(_finding(LOCAL_DISK_FULL, message))
        return True
    message = (
        f"the transfer did not finish after {len(attempts)} tries: "
        f"{attempts[-1].error}; what arrived is kept, run the pull again"
    )
    outcome.findings.append(_finding(PULL_INCOMPLETE, message))
    return True


def _free_bytes(local_root: str) -> int:
    """Free bytes for this user on LOCAL_ROOT's disk (of its nearest existing parent)."""
    path = local_root
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _free_words(local_root: str) -> str:
    from rentcheck.pull.progress import human_bytes

    try:
        return f"{human_bytes(_free_bytes(local_root))} free there now"
    except OSError as exc:
        return f"its free space cannot be read ({exc.strerror})"


def _space_short(local_root: str, wants: Sequence[Want], whole: Sequence[Want]) -> str | None:
    """Why LOCAL_ROOT's disk cannot take this pull (None: it can): what is still to come
    (appends: the rest of each file; whole files: all of it, beside the old copy)."""
    from rentcheck.pull.progress import human_bytes

    needed = sum(max(0, w.size - _local_size(local_root, w.path)) for w in wants)
    needed += sum(w.size for w in whole)
    try:
        free = _free_bytes(local_root)
    except OSError:
        return None  # unknown: the transfer names a full disk when it meets one
    if needed <= free:
        return None
    return (
        f"LOCAL_ROOT ({local_root}) has {human_bytes(free)} free, this pull needs "
        f"{human_bytes(needed)} more ({needed - free} bytes short): nothing was transferred"
    )


def _local_size(local_root: str, rel: str) -> int:
    try:
        return os.lstat(os.path.join(local_root, rel)).st_size
    except OSError:
        return 0


def _moved(tree: BoxTree, entry: _Entry) -> bool:
    """Whether a roster entry's file is gone from the box or has another size or mtime."""
    now = tree.files.get(entry.path)
    return now is None or (now.size, now.mtime_ns) != (entry.size, entry.mtime_ns)


def _stat_with_retry(endpoint: Endpoint, box: Any, timeout: float, files: Roster) -> Any:
    from rentcheck.box.transport import close_host

    known = files.paths if files.is_sorted else ()  # shared strings: numbers only per file
    try:
        return stat_roster(box, endpoint.root, timeout=timeout, known=known)
    except RemoteError:
        close_host(endpoint.host, ssh_config=endpoint.ssh_config)
        return stat_roster(endpoint.open(), endpoint.root, timeout=timeout, known=known)


class RosterWants(Sequence[Want]):
    """The roster's files to bring, as a view of its columns: a Want is made as it is read,
    not held per file (a million-file pull held a million of them). ``whole``: the files in
    ``stale`` (fetched again whole), else the others; their positions are kept (8 bytes a
    file) only when ``stale`` splits the roster."""

    def __init__(self, files: Roster, stale: set[str], *, whole: bool) -> None:
        self._files = files
        self._at: array[int] | None = None
        self._len = 0 if whole else len(files)
        if stale:
            self._at = array("q", (i for i, p in enumerate(files.paths) if (p in stale) == whole))
            self._len = len(self._at)

    def __len__(self) -> int:
        return self._len

    def _want(self, i: int) -> Want:
        at = i if self._at is None else self._at[i]
        return Want(self._files.paths[at], self._files.sizes[at])

    @overload
    def __getitem__(self, i: int) -> Want: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Want]: ...

    def __getitem__(self, i: int | slice) -> Want | Sequence[Want]:
        if isinstance(i, slice):
            return [self._want(k) for k in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("want index out of range")
        return self._want(i)

    def __iter__(self) -> Iterator[Want]:
        return (self._want(i) for i in range(self._len))


class _Entry(NamedTuple):
    path: str
    size: int
    mtime_ns: int


def _entries(files: Roster, rehashed: dict[str, dict[str, Any]]) -> Iterator[_Entry]:
    """Path, size and mtime of every roster file (as re-hashed, where it was), read from the
    roster's columns: no entry object is made for the others."""
    for path, size, mtime in zip(files.paths, files.sizes, files.mtimes, strict=True):
        again = rehashed.get(path)
        if again is None:
            yield _Entry(path, size, mtime)
        else:
            yield _Entry(path, int(again["size"]), int(again["mtime_ns"]))

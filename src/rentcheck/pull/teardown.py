"""The teardown gate: nothing is released until the pull was verified against the box as it is now.

Judged by content, not by a manifest's identity: the box is re-read now (sizes and mtimes of
every file, SHA-256 of each whose size or mtime differs from the verified roster, of all with
``rehash``) and compared file by file with PULL_VERIFIED.json. A file added or changed on the
box since the pull fails, named; so does a local file changed or deleted since verify. The
same content under a rebuilt roster (a new run id) passes. It passes only once the person
approved the platform's meter-stop action after being told what it destroys. It reads files
and reports; it never runs a platform command and never deletes anything.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rentcheck import record
from rentcheck.errors import FormatError
from rentcheck.model import Finding, Severity
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.local_proof import CTIME_SLACK_NS, epoch_ns, local_drift
from rentcheck.pull.manifest import Manifest, Roster, load_manifest, position
from rentcheck.pull.marker import VerifiedMarker, load_verified_marker
from rentcheck.pull.teardown_rules import (
    BOX_MANIFEST_UNREADABLE,
    MANIFEST_CHANGED,
    METER_STOP_IRREVERSIBLE,
    METER_STOP_NOT_APPROVED,
    TEARDOWN_RULES_BY_CODE,
    VERIFIED_MARKER_MISSING,
)

if TYPE_CHECKING:
    from rentcheck.box.transport import Box
    from rentcheck.profiles.model import Profile
    from rentcheck.pull.remote_roster import BoxFile, Hashed
    from rentcheck.pull.teardown_record import RecordVerdict

__all__ = [
    "BoxNow",
    "MeterStopPlan",
    "TeardownResult",
    "box_now_from_manifest",
    "check_teardown",
    "describe",
    "meter_stop_plan",
    "read_box_now",
]


@dataclass(frozen=True)
class MeterStopPlan:
    """The one action that stops the meter, in the profile's words (or the person's)."""

    platform: str | None
    action: str
    verb: str
    irreversible: bool | None  # None: unknown, treated as irreversible
    destroys: tuple[str, ...]  # "tier (paths)", tiers of unknown fate included
    keeps: tuple[str, ...]
    warning: str
    clocks: tuple[str, ...] = ()  # the profile's danger clocks, in words

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _tier(name: str, paths: tuple[str, ...], note: str = "") -> str:
    return f"{name} ({', '.join(paths) or 'no path'}){note}"


def meter_stop_plan(profile: Profile | None, text: str | None = None) -> MeterStopPlan:
    """From the profile; without one, from ``text`` (the action in the person's words)."""
    if profile is None:
        action = (text or "").strip() or "unknown"
        return MeterStopPlan(
            None,
            action,
            action.split()[0].lower() if action.split() else "",
            None,
            ("everything on the box (no profile says what survives)",),
            (),
            f"The action that stops the meter is: {action}. No platform profile was given, "
            "so what it destroys is unknown: treat everything on the box as deleted.",
        )
    meter = profile.meter_stop
    destroyed = [_tier(t.name, t.paths) for t in profile.destroyed_tiers]
    destroyed += [
        _tier(t.name, t.paths, " (fate unknown: treat as deleted)")
        for t in profile.tiers
        if t.survives_meter_stop is None and t.name not in meter.destroys
    ]
    kept = tuple(_tier(t.name, t.paths) for t in profile.tiers if t.name in meter.keeps)
    warning = profile.meter_stop_warning()
    if text:
        warning += f" You describe it as: {text.strip()}."
    clocks = tuple(
        f"{c.what} (after {c.after})" if c.after else c.what for c in profile.danger_clocks
    )
    return MeterStopPlan(
        profile.platform,
        meter.action,
        meter.verb,
        meter.irreversible,
        tuple(destroyed),
        kept,
        warning,
        clocks,
    )


WRITING = "writing"  # the digest of a file that changed while it was hashed on the box
VANISHED = "vanished"  # stat'ed on the box, gone when it was to be hashed
UNREADABLE = "unreadable"  # stat'ed on the box, could not be read to hash it
_STATES = {
    WRITING: "being written on the box right now (it changed while it was hashed)",
    VANISHED: "gone when it was to be hashed on the box (deleted and being recreated?)",
    UNREADABLE: "could not be read on the box to prove its content unchanged",
}


NowFile = tuple[int, int, str | None]  # size, mtime_ns, SHA-256 (or a state word) or None


class ReadFiles(Mapping[str, NowFile]):
    """The box re-read, path -> (size, mtime_ns, digest), as views of the stat answer's
    columns (``BoxFiles``) plus the digests of the files hashed now: a file costs what the
    stat answer holds of it (its numbers; its path string is the verified roster's), not a
    dict entry and a tuple (about 200 bytes) made for each of a million files. ``found``:
    files the walk missed, found again by the hash (a delete-and-recreate), few."""

    def __init__(
        self, stat: Mapping[str, BoxFile], digests: dict[str, str], found: dict[str, NowFile]
    ) -> None:
        self._stat, self._digests, self._found = stat, digests, found

    def __getitem__(self, path: str) -> NowFile:
        found = self._found.get(path)
        if found is not None:
            return found
        f = self._stat[path]
        return f.size, f.mtime_ns, self._digests.get(path)

    def __contains__(self, path: object) -> bool:
        return path in self._found or path in self._stat

    def __iter__(self) -> Iterator[str]:
        return itertools.chain(self._stat, self._found)

    def __len__(self) -> int:
        return len(self._stat) + len(self._found)


class RosterFiles(Mapping[str, NowFile]):
    """A roster rebuilt on the box (``--manifest-now``), path -> (size, mtime_ns, SHA-256),
    as a view of its columns: nothing made per file until it is looked at."""

    def __init__(self, roster: Roster) -> None:
        self._roster = roster

    def __getitem__(self, path: str) -> NowFile:
        at = position(self._roster, path) if isinstance(path, str) else None
        if at is None:
            raise KeyError(path)
        return self._roster.sizes[at], self._roster.mtimes[at], self._roster.entry(at).sha256

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and position(self._roster, path) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._roster.paths)

    def __len__(self) -> int:
        return len(self._roster)


@dataclass(frozen=True)
class BoxNow:
    """The box as it is now: every file with size, mtime and (where hashed) SHA-256."""

    where: str  # "HOST:ROOT" or the manifest file it was read from
    files: Mapping[str, NowFile]
    unfinished: tuple[str, ...] = ()  # leftovers of writes in progress on the box
    hashed: int = 0
    reread: bool = False  # True: read on the box just now (--host); False: a roster file


@dataclass(frozen=True)
class TeardownResult:
    findings: tuple[Finding, ...]
    marker_path: str
    box_now: str | None
    verified_manifest_sha256: str | None
    plan: MeterStopPlan
    approved: bool
    files_checked: int
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    gone_on_box: tuple[str, ...] = ()
    hashed_on_box: int = 0
    # Evidence counters ("no evidence, no pass"): the box was re-read over --host just now;
    # of the jobs the ledger records as launched there, how many the box proved ended; of
    # the recorded directories, how many lie inside the pulled root (or are gone).
    box_reread: bool = False
    files_on_box_now: int = 0
    jobs_recorded: int = 0
    jobs_proved_ended: int = 0
    paths_recorded: int = 0
    paths_covered: int = 0
    box_processes_checked: bool = False  # the box listed every rentcheck job and writer

    @property
    def passed(self) -> bool:
        return not any(f.severity >= Severity.ERROR for f in self.findings)

    @property
    def ready_but_unapproved(self) -> bool:
        """Everything holds but the approval (the only finding is RC804)."""
        blocking = {f.code for f in self.findings if f.severity >= Severity.ERROR}
        return blocking == {METER_STOP_NOT_APPROVED}

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,  # the emit path writes the gate's one verdict here
            "approved": self.approved,
            "marker": self.marker_path,
            "box_now": self.box_now,
            "manifest_sha256": {"verified": self.verified_manifest_sha256},
            "added_on_box": list(self.added),
            "changed_on_box": list(self.changed),
            "gone_on_box": list(self.gone_on_box),
            "hashed_on_box": self.hashed_on_box,
            "box_reread": self.box_reread,
            "files_on_box_now": self.files_on_box_now,
            "jobs_recorded": self.jobs_recorded,
            "jobs_proved_ended": self.jobs_proved_ended,
            "paths_recorded": self.paths_recorded,
            "paths_covered": self.paths_covered,
            "box_processes_checked": self.box_processes_checked,
            "meter_stop": self.plan.to_dict(),
            "runs_platform_commands": False,
        }


def _finding(code: str, message: str, path: str | None, **details: Any) -> Finding:
    return TEARDOWN_RULES_BY_CODE[code].finding(message, path=path, details=details)


def marker_path(verified: str) -> tuple[str, str]:
    """(marker file, pulled root) for ``--verified`` naming either the root or the marker."""
    if os.path.isdir(verified):
        return os.path.join(verified, builder.VERIFIED_NAME), verified
    return verified, os.path.dirname(verified) or "."


def read_marker(verified: str | os.PathLike[str]) -> tuple[VerifiedMarker | None, str | None]:
    """The marker, or None and why it cannot be read."""
    path, _ = marker_path(os.fspath(verified))
    try:
        return load_verified_marker(path), None
    except FormatError as exc:
        return None, exc.message


def pulled_roster(root: str, marker: VerifiedMarker) -> Manifest | None:
    """The roster the marker was verified against (LOCAL_ROOT/PULL_MANIFEST.json), if intact:
    its mtimes are the box's at pull time."""
    try:
        roster = load_manifest(os.path.join(root, builder.MANIFEST_NAME))
    except FormatError:
        return None
    return roster if roster.sha256 == marker.manifest_sha256 else None


def box_now_from_manifest(path: str, pulled: Manifest | None) -> BoxNow:
    """``--manifest-now FILE``: a roster rebuilt on the box after the verified pull's roster
    ``pulled`` (FormatError if unreadable, or if it cannot prove it is newer: the pull's own
    roster, or one built no later than it, says nothing about the box now)."""
    now = load_manifest(path)
    if pulled is None:
        raise FormatError(
            f"{path} cannot be proved newer than the verified pull: the pulled root's "
            f"{builder.MANIFEST_NAME} is missing or is not the one verified",
            hint="run teardown with --host HOST, or pull again",
        )
    if now.sha256 == pulled.sha256:
        raise FormatError(
            f"{path} is the verified pull's own roster, not the box as it is now",
            hint="rebuild it on the box now (`rentcheck manifest build REMOTE_ROOT` there)",
        )
    if now.created_at <= pulled.created_at:
        raise FormatError(
            f"{path} was built at {now.created_at.isoformat()}, not after the verified pull's "
            f"roster ({pulled.created_at.isoformat()}): it may predate the pull",
            hint="rebuild it on the box now (`rentcheck manifest build REMOTE_ROOT` there)",
        )
    files = RosterFiles(now.files)
    return BoxNow(path, files, tuple(left.path for left in now.leftovers), len(files))


def read_box_now(
    box: Box,
    root: str,
    marker: VerifiedMarker,
    pulled: Manifest | None,
    *,
    rehash: bool,
    timeout: float,
) -> BoxNow:
    """Stat every file on the box; hash each verified one unless its size and mtime equal
    the verified roster's and its ctime (which ``utime`` cannot set back) predates that
    roster's build (all of them with ``rehash``, or when the roster is not at hand). A
    verified file the walk missed is looked for again: one caught in a delete gap is
    judged by content, not counted gone."""
    from rentcheck.pull.remote_roster import hash_files, stat_roster

    verified, then = marker.files, None if pulled is None else pulled.files
    # The verified roster's path strings, shared: a file listed in both costs its numbers.
    tree = stat_roster(
        box, root, timeout=timeout, known=verified.paths if verified.is_sorted else ()
    )
    since = None if pulled is None else epoch_ns(pulled.created_at) - CTIME_SLACK_NS
    wanted = []
    for path, f in tree.files.items():
        if position(verified, path) is None:
            continue  # not verified: added on the box, named without hashing
        at = None if then is None else position(then, path)
        known = None if then is None or at is None else (then.sizes[at], then.mtimes[at])
        moved = since is None or not f.ctime_ns or f.ctime_ns >= since
        if rehash or moved or known != (f.size, f.mtime_ns):
            wanted.append(path)
    missed = [p for p in verified.paths if p not in tree.files]
    hashed = hash_files(box, root, wanted + missed, timeout=timeout)
    # Only the files asked about have a digest (never None: a file that vanished or could
    # not be read is not unchanged); every other file's is None, as a stat says no more.
    digests = {path: _digest(path, hashed) or VANISHED for path in wanted}
    found: dict[str, NowFile] = {}
    for path in missed:  # back after the walk passed it: a delete-and-recreate
        entry = hashed.entries.get(path)
        if entry is not None or path in hashed.unstable or path in hashed.unreadable:
            size = int(entry["size"]) if entry else -1
            found[path] = (size, int(entry["mtime_ns"]) if entry else 0, _digest(path, hashed))
    files = ReadFiles(tree.files, digests, found)
    where = root if box.name == "local" else f"{box.name}:{root}"
    return BoxNow(where, files, tuple(sorted(tree.leftovers)), len(hashed.entries), reread=True)


def _digest(path: str, hashed: Hashed, asked: bool = True) -> str | None:
    """The file's SHA-256 now, a state word when it has none (never None when it was
    asked for: a file that vanished or could not be read is not unchanged)."""
    if path in hashed.unstable:
        return WRITING
    if path in hashed.unreadable:
        return UNREADABLE
    entry = hashed.entries.get(path)
    if entry is not None:
        return str(entry["sha256"])
    return VANISHED if asked else None


def check_teardown(
    verified: str | os.PathLike[str],
    now: BoxNow | None,
    plan: MeterStopPlan,
    *,
    approved: bool = False,
    unreadable: str | None = None,
    rehash: bool = False,
    recorded: RecordVerdict | None = None,
) -> TeardownResult:
    """Judge whether the meter may be stopped, from the box ``now`` (None: ``unreadable``
    says why it could not be read) and what the ledger records about it (``recorded``: its
    jobs proved ended, its directories covered); reads local files only."""
    path, root = marker_path(os.fspath(verified))
    findings: list[Finding] = []
    marker, why = read_marker(verified)
    if marker is None:
        findings.append(_finding(VERIFIED_MARKER_MISSING, f"no verified pull: {why}", path))
    if now is None and unreadable is not None:
        findings.append(_finding(BOX_MANIFEST_UNREADABLE, unreadable, None))
    added: list[str] = []
    changed: list[str] = []
    gone: list[str] = []
    if marker is not None and now is not None:
        then = marker.files
        for rel in sorted(now.files):
            size, _, sha = now.files[rel]
            at = position(then, rel)
            if at is None:
                added.append(rel)
                findings.append(
                    _finding(
                        MANIFEST_CHANGED,
                        f"added on the box since the pull ({size} bytes): not in the verified copy",
                        rel,
                        change="added",
                        where=now.where,
                    )
                )
            elif sha in _STATES:
                changed.append(rel)
                findings.append(
                    _finding(MANIFEST_CHANGED, _STATES[sha], rel, change=sha, where=now.where)
                )
            elif sha is not None and sha != (verified_sha := then.entry(at).sha256):
                changed.append(rel)
                findings.append(
                    _finding(
                        MANIFEST_CHANGED,
                        f"changed on the box since the pull (sha256 {sha[:12]}... now, "
                        f"{verified_sha[:12]}... verified)",
                        rel,
                        change="changed",
                        where=now.where,
                    )
                )
        for rel in now.unfinished:
            added.append(rel)
            findings.append(
                _finding(
                    MANIFEST_CHANGED,
                    "an unfinished write on the box (the run goes on?)",
                    rel,
                    change="unfinished",
                    where=now.where,
                )
            )
        gone = sorted(path for path in then.paths if path not in now.files)
    if marker is not None:
        for d in local_drift(root, marker, rehash=rehash):
            shown = os.path.join(root, d.path) if d.path else root
            findings.append(record.replace(d, path=shown))
    if recorded is not None:
        findings += recorded.findings
    if not findings and not approved:
        destroys = "; ".join(plan.destroys) or "no storage tier"
        findings.append(
            _finding(
                METER_STOP_NOT_APPROVED,
                f"the pull is verified and the box holds nothing newer, but stopping the meter "
                f"needs --approve: {plan.action!r} destroys {destroys}",
                None,
                destroys=list(plan.destroys),
            )
        )
    if plan.irreversible is not False and plan.verb not in ("none", "automatic"):
        undo = "cannot be undone" if plan.irreversible else "may not be reversible (unknown)"
        findings.append(_finding(METER_STOP_IRREVERSIBLE, f"{plan.action!r} {undo}", None))
    return TeardownResult(
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        marker_path=path,
        box_now=None if now is None else now.where,
        verified_manifest_sha256=marker.manifest_sha256 if marker else None,
        plan=plan,
        approved=approved,
        files_checked=len(marker.files) if marker else 0,
        added=tuple(added),
        changed=tuple(changed),
        gone_on_box=tuple(gone),
        hashed_on_box=0 if now is None else now.hashed,
        box_reread=now is not None and now.reread,
        files_on_box_now=0 if now is None else len(now.files),
        jobs_recorded=0 if recorded is None else recorded.jobs_recorded,
        jobs_proved_ended=0 if recorded is None else recorded.jobs_proved_ended,
        paths_recorded=0 if recorded is None else recorded.paths_recorded,
        paths_covered=0 if recorded is None else recorded.paths_covered,
        box_processes_checked=recorded is not None and recorded.box_processes_checked,
    )


def describe(result: TeardownResult, *, passed: bool) -> tuple[str, ...]:
    """The meter-stop block printed above the findings (text output), one element a line (the
    emit path escapes a line break inside one: it came from the box), worded from the gate's
    one verdict (``passed``: judge()'s, prerequisites and evidence included)."""
    plan = result.plan
    where = f" on {plan.platform}" if plan.platform else ""
    undo = {True: "cannot be undone", False: "can be undone", None: "reversibility unknown"}
    lines = [
        f"meter stop{where}: {plan.action} ({undo[plan.irreversible]})",
        f"  destroys: {'; '.join(plan.destroys) or 'no storage tier'}",
    ]
    if plan.keeps:
        lines.append(f"  keeps:    {'; '.join(plan.keeps)}")
    for clock in plan.clocks:
        lines.append(f"  danger clock: {clock}")
    lines.append(f"  {plan.warning}")
    if result.box_now is not None:
        lines.append(
            f"box now ({result.box_now}): {len(result.added)} added, {len(result.changed)} "
            f"changed, {len(result.gone_on_box)} gone since the pull; "
            f"{result.hashed_on_box} file(s) hashed there"
        )
    if result.jobs_recorded or result.paths_recorded:
        lines.append(
            f"ledger: {result.jobs_proved_ended} of {result.jobs_recorded} launched job(s) "
            f"proved ended on the box; {result.paths_covered} of {result.paths_recorded} "
            "recorded director(ies) inside the verified pull"
        )
    if passed:
        lines.append("teardown gate passed: you may now stop the meter yourself.")
    else:
        lines.append("teardown gate FAILED: do not stop the meter; the findings say why.")
    lines.append("rentcheck never runs the platform's meter-stop command.")
    return tuple(lines)

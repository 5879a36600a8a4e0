"""What rentcheck recorded about a box, and whether the box now and the verified copy account
for it: every job launched there proved ended, every recorded directory inside the pull.

The record is the ledger's lines for the host (its alias in the teardown and in the pull's
marker) since its last passed teardown: a passed teardown ends a rental, so an alias reused
for a new box starts afresh. From each line's evidence come the jobs (session, pid, start
ticks, process group, boot id) and the paths (``RECORDED_PATHS``). The box is asked in one
exec of the job probe (``mode: teardown``): is each job's pid the one started then, and is any
process of its group alive; where each path and the pulled root are (real paths). Anything
not answered is unknown, and unknown never passes (RC808).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rentcheck.errors import RemoteError
from rentcheck.model import Finding
from rentcheck.pull.teardown_rules import (
    BOX_RECORD_UNPROVED,
    BOX_WRITER_RUNNING,
    LAUNCHED_JOB_RUNNING,
    RECORDED_PATH_NOT_PULLED,
    TEARDOWN_RULES_BY_CODE,
)

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = [
    "RECORDED_PATHS",
    "BoxRecord",
    "RecordNow",
    "RecordVerdict",
    "ask_box",
    "judge_record",
    "recorded_about",
]

# Evidence keys naming a place on the box whose files the verified copy must cover, in words,
# whichever gate recorded them (launch: its --ckpt-dir; watch: the directory its probe looked
# in and the newest checkpoint there, as the box's job status named them). The log is not
# here: it lives under ~/.rentcheck/jobs/ by default and is not a result.
RECORDED_PATHS: tuple[tuple[str, str], ...] = (
    ("checkpoint_dir", "checkpoint directory"),
    ("newest_checkpoint", "newest checkpoint"),
)
ENDED_VERDICTS = ("pass", "forced")  # a teardown with one of these ended the box's record


@dataclass(frozen=True)
class RecordedJob:
    host: str
    session: str
    pid: int | None
    start_ticks: int | None
    pgid: int | None
    boot_id: str | None
    gate: str
    time: str

    @property
    def key(self) -> str:
        return f"{self.session}:{self.pid}:{self.start_ticks}"

    def status(self) -> dict[str, Any]:
        """What the job probe's ``process`` reads (the wrapper's status numbers)."""
        status: dict[str, Any] = {"pid": self.pid, "start_ticks": self.start_ticks}
        if self.pgid is not None:
            status["pgid"] = self.pgid
        if self.boot_id:
            status["boot_id"] = self.boot_id
        return status


@dataclass(frozen=True)
class RecordedPath:
    kind: str  # the evidence key
    path: str
    session: str | None
    gate: str
    time: str


@dataclass(frozen=True)
class BoxRecord:
    hosts: tuple[str, ...]
    jobs: tuple[RecordedJob, ...] = ()
    paths: tuple[RecordedPath, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.jobs and not self.paths


@dataclass(frozen=True)
class RecordNow:
    """The job probe's answer (``jobs``: key -> process fact; ``paths``: path -> real path),
    or why the box could not be asked."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreadable: str | None = None
    asked: bool = False  # the box answered: its own job list and its writers count too
    box_jobs: dict[str, dict[str, Any]] | None = None  # every job dir on the box
    writers: list[dict[str, Any]] | None = None  # processes writing under the root


@dataclass(frozen=True)
class RecordVerdict:
    findings: tuple[Finding, ...]
    jobs_recorded: int
    jobs_proved_ended: int
    paths_recorded: int
    paths_covered: int
    box_processes_checked: bool = False  # the box listed its jobs and its writers now


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def recorded_about(project_root: str, hosts: tuple[str, ...]) -> BoxRecord:
    """The jobs and paths the ledger in ``project_root`` records for any of ``hosts``."""
    from rentcheck.ledger import read_ledger

    entries = [e for e in read_ledger(project_root).entries if e.get("host") in hosts]
    start = 0
    for index, entry in enumerate(entries):
        if entry.get("gate") == "teardown" and entry.get("verdict") in ENDED_VERDICTS:
            start = index + 1
    jobs: dict[str, RecordedJob] = {}
    paths: dict[tuple[str, str], RecordedPath] = {}
    for entry in entries[start:]:
        evidence = entry.get("evidence")
        if not isinstance(evidence, dict):
            continue
        gate, when = str(entry.get("gate")), str(entry.get("time"))
        session = evidence.get("session")
        if gate == "launch" and session and evidence.get("pid"):
            job = RecordedJob(
                host=str(entry.get("host")),
                session=str(session),
                pid=_int(evidence.get("pid")),
                start_ticks=_int(evidence.get("start_ticks")),
                pgid=_int(evidence.get("pgid")),
                boot_id=evidence.get("boot_id") or None,
                gate=gate,
                time=when,
            )
            jobs.setdefault(job.key, job)
        for key, _ in RECORDED_PATHS:
            value = evidence.get(key)
            if isinstance(value, str) and value:
                paths.setdefault(
                    (key, value),
                    RecordedPath(key, value, str(session) if session else None, gate, when),
                )
    return BoxRecord(hosts, tuple(jobs.values()), tuple(paths.values()))


def ask_box(box: Box, record: BoxRecord, root: str, *, timeout: float) -> RecordNow:
    """One job-probe exec: the jobs' state and the paths' real places (RecordNow.unreadable
    says why when the box could not be asked)."""
    from rentcheck.box.jobfacts import gather_job
    from rentcheck.box.launch import JOBS_DIR

    request = {
        "mode": "teardown",
        "jobs": {j.key: j.status() for j in record.jobs if None not in (j.pid, j.start_ticks)},
        "paths": sorted({p.path for p in record.paths}),
        "root": root,
        "jobs_dir": JOBS_DIR,
    }
    try:
        facts = gather_job(box, request, min(timeout, 120.0))
    except RemoteError as exc:
        return RecordNow(unreadable=str(exc))
    return RecordNow(
        dict(facts.get("jobs") or {}),
        dict(facts.get("paths") or {}),
        asked=True,
        box_jobs=facts.get("box_jobs"),
        writers=facts.get("writers"),
    )


def _finding(code: str, message: str, path: str | None, **details: Any) -> Finding:
    return TEARDOWN_RULES_BY_CODE[code].finding(message, path=path, details=details)


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def _job_findings(record: BoxRecord, now: RecordNow, host: str) -> tuple[list[Finding], int]:
    out: list[Finding] = []
    ended = 0
    for job in record.jobs:
        fact = now.jobs.get(job.key)
        name = f"job {job.session} (pid {job.pid})"
        details = {"session": job.session, "pid": job.pid, "launched": job.time, "host": host}
        unnamed = job.pid is None or job.start_ticks is None
        if unnamed or not isinstance(fact, dict) or not isinstance(fact.get("alive"), bool):
            why = now.unreadable or "the box's answer does not say"
            if unnamed:  # a bare pid may be recycled: it can prove nothing either way
                why = "its launch recorded no pid and start time"
            out.append(
                _finding(
                    BOX_RECORD_UNPROVED,
                    f"{name} launched on {host} at {job.time}: not proved ended ({why}); run "
                    f"`rentcheck teardown --host {host} ...` when the box answers",
                    None,
                    **details,
                )
            )
            continue
        group = int(fact.get("group_alive") or 0)
        if fact["alive"] or group:
            what = "is still running" if fact["alive"] else f"left {group} process(es) running"
            stop = f"ssh {host} kill -TERM -- -{job.pgid or job.pid}"
            out.append(
                _finding(
                    LAUNCHED_JOB_RUNNING,
                    f"{name} launched on {host} {what}: it can write after this check. Wait "
                    f"for it (`rentcheck watch --host {host} --session {job.session}`) or stop "
                    f"it (`{stop}`), then `rentcheck pull` again and rerun teardown",
                    None,
                    **details,
                    group_alive=group,
                )
            )
            continue
        ended += 1
    return out, ended


def _real_of(now: RecordNow, path: str | None) -> str | None:
    fact = now.paths.get(path) if path else None
    real = fact.get("real") if isinstance(fact, dict) else None
    return posixpath.normpath(real) if isinstance(real, str) else None


def judge_record(record: BoxRecord, now: RecordNow, root: str | None, host: str) -> RecordVerdict:
    """RC806/RC807/RC808 for what the record names that the box now (``now``, or why it was
    not asked) or the verified copy under ``root`` (the pull's root on the box) does not
    cover."""
    out, ended = _job_findings(record, now, host)
    covered = 0
    real_root = _real_of(now, root)
    outside = set()  # real paths of recorded places outside the root: one refusal each
    for recorded in record.paths:
        real = _real_of(now, recorded.path)
        gone = (now.paths.get(recorded.path) or {}).get("exists") is False
        if real and real_root and not gone and not _inside(real, real_root):
            outside.add(real)
    for recorded in record.paths:
        words = dict(RECORDED_PATHS)[recorded.kind]
        fact = now.paths.get(recorded.path)
        real = _real_of(now, recorded.path)
        details = {"kind": recorded.kind, "session": recorded.session, "host": host}
        if real is None or real_root is None:
            why = now.unreadable or "the box's answer does not say"
            out.append(
                _finding(
                    BOX_RECORD_UNPROVED,
                    f"{words} {recorded.path} recorded by {recorded.gate} on {host}: could not "
                    f"be checked against the pulled root ({why})",
                    recorded.path,
                    **details,
                )
            )
        elif isinstance(fact, dict) and fact.get("exists") is False:
            covered += 1  # nothing there now: nothing a meter stop could take
        elif _inside(real, real_root):
            covered += 1
        elif any(real != other and _inside(real, other) for other in outside):
            continue  # inside a recorded place already named below: one refusal, one fix
        else:
            parent = posixpath.commonpath([real, real_root])
            out.append(
                _finding(
                    RECORDED_PATH_NOT_PULLED,
                    f"{words} {recorded.path} (recorded by {recorded.gate}"
                    + (f" of session {recorded.session}" if recorded.session else "")
                    + f") is outside the verified pull of {host}:{real_root}: pull a root "
                    f"that holds both (`rentcheck pull {host}:{parent} LOCAL_ROOT`) and "
                    "teardown --verified LOCAL_ROOT",
                    recorded.path,
                    **details,
                    real=real,
                    root=real_root,
                )
            )
    checked = False
    if now.asked:
        box_findings, checked = _box_findings(record, now, host)
        out += box_findings
    return RecordVerdict(tuple(out), len(record.jobs), ended, len(record.paths), covered, checked)


def _box_findings(record: BoxRecord, now: RecordNow, host: str) -> tuple[list[Finding], bool]:
    """What the box itself says, whatever the ledger here holds: a job any rentcheck launch
    left running there (RC806), a process writing under the root (RC809)."""
    out: list[Finding] = []
    named = {(j.pid, j.start_ticks) for j in record.jobs}
    for session, job in sorted((now.box_jobs or {}).items()):
        status, proc = job.get("status") or {}, job.get("process") or {}
        if (status.get("pid"), status.get("start_ticks")) in named:
            continue  # the ledger's own job: judged above
        group = int(proc.get("group_alive") or 0)
        if proc.get("alive") or group:
            pgid = status.get("pgid") or status.get("pid")
            out.append(
                _finding(
                    LAUNCHED_JOB_RUNNING,
                    f"job {session} (pid {status.get('pid')}) on {host} is still running and "
                    "works under the pulled root: launched by rentcheck from another project "
                    "or under another name (its job directory is on the box). Wait for it "
                    f"(`rentcheck watch --host {host} --session {session}`) or stop it "
                    f"(`ssh {host} kill -TERM -- -{pgid}`), then `rentcheck pull` again and "
                    "rerun teardown",
                    None,
                    session=session,
                    pid=status.get("pid"),
                    host=host,
                    group_alive=group,
                    source="box",
                )
            )
    by_pid: dict[int, list[str]] = {}
    comm: dict[int, str] = {}
    for w in now.writers or []:
        by_pid.setdefault(int(w["pid"]), []).append(str(w["path"]))
        comm[int(w["pid"])] = str(w.get("comm") or "")
    for pid, held in sorted(by_pid.items()):
        shown = ", ".join(sorted(set(held))[:3]) + (" ..." if len(set(held)) > 3 else "")
        out.append(
            _finding(
                BOX_WRITER_RUNNING,
                f"pid {pid} ({comm[pid]}) on {host} has {shown} open for writing under the "
                f"pulled root: wait for it to finish or stop it (`ssh {host} kill -TERM "
                f"{pid}`), then `rentcheck pull` again and rerun teardown",
                sorted(held)[0],
                pid=pid,
                comm=comm[pid],
                host=host,
            )
        )
    unanswered = [k for k, v in (("jobs", now.box_jobs), ("writers", now.writers)) if v is None]
    for what in unanswered:
        words = {"jobs": "the jobs rentcheck launched there", "writers": "its writing processes"}
        out.append(
            _finding(
                BOX_RECORD_UNPROVED,
                f"{host} did not list {words[what]}: nothing proves the copy is final",
                None,
                host=host,
                fact=what,
            )
        )
    return out, not unanswered

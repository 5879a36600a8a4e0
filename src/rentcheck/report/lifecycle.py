"""What ``rentcheck report`` shows, gathered once for both the HTML and the markdown form.

Inputs: the project's ledger (every gate verdict, in order) and the last JSON report of each
gate (``.rentcheck/last/``, or files named on the command line). Everything read here is data
from runs and boxes: the renderers escape every string of it; links are built only from rule
codes rentcheck knows, never taken from the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GateState",
    "Lifecycle",
    "MountBar",
    "ResumeScenario",
    "RuleGroup",
    "gather",
]


@dataclass(frozen=True)
class GateState:
    """One gate's place on the timeline: its phase and its last verdict (None: never ran)."""

    name: str
    phase: str
    verdict: str | None
    time: str | None
    host: str | None


@dataclass(frozen=True)
class MountBar:
    """One audited path's filesystem: bytes used / budget / free, and inodes."""

    role: str
    path: str
    mount_point: str
    bytes_total: int | None
    bytes_free: int | None
    budget_bytes: int
    inodes_total: int | None
    inodes_free: int | None

    @property
    def within_budget(self) -> bool | None:
        if self.bytes_free is None or self.budget_bytes <= 0:
            return None
        return self.bytes_free >= self.budget_bytes


@dataclass(frozen=True)
class RuleGroup:
    """Every finding of one rule across the gates' last reports."""

    code: str
    name: str | None
    severity: str
    doc_url: str | None
    findings: tuple[tuple[str, Mapping[str, Any]], ...]  # (gate, finding as in the JSON)


@dataclass
class Lifecycle:
    project: str
    generated_at: str
    version: str
    gates: list[GateState]
    entries: list[dict[str, Any]]  # ledger lines, oldest first
    reports: dict[str, dict[str, Any]]
    mounts: list[MountBar]
    audit_host: str | None
    verify_files: list[Mapping[str, Any]]
    verify_root: str | None
    rules: list[RuleGroup]
    problems: list[str] = field(default_factory=list)
    verify_total: int = 0  # files verify read; more than the rows when a text run cut them
    verify_via: str = "verify"  # the gate whose last report holds the verify: verify or pull
    resume: list[ResumeScenario] = field(default_factory=list)
    durations: list[tuple[str, float]] = field(default_factory=list)  # (what, seconds)
    smoke_losses: tuple[tuple[int, float], ...] = ()  # (step, loss) of the last smoke run
    # (seconds since the first watch, step, disk used %, inodes used %) of the last launch
    watch_history: tuple[tuple[float, int | None, float | None, float | None], ...] = ()
    watch_host: str | None = None

    def verify_count(self) -> str:
        """'N file(s)', or 'N of M file(s) listed' when the ok rows were cut."""
        listed = len(self.verify_files)
        if self.verify_total > listed:
            return f"{listed} of {self.verify_total} file(s) listed (every one not ok)"
        return f"{listed} file(s)"


@dataclass(frozen=True)
class ResumeScenario:
    """One kill scenario of the last resume run, as numbers a picture can be drawn from."""

    name: str
    ran: bool
    killed_after: int | None  # the last step the killed run logged
    durable: int | None  # the newest complete checkpoint when it was killed
    relaunch_first: int | None
    relaunch_last: int | None
    compared: int | None
    first_mismatch: int | None
    relaunch_failed: bool
    signal: str | None
    reference_last: int | None  # the uninterrupted run's last step
    # (step, loss) per run: "reference", "killed", "relaunch" (absent: not read)
    losses: Mapping[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.ran and not self.relaunch_failed and self.first_mismatch is None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _mounts(audit: Mapping[str, Any] | None) -> list[MountBar]:
    if not audit:
        return []
    facts = audit.get("facts")
    paths = facts.get("paths") if isinstance(facts, Mapping) else None
    budget = audit.get("budget")
    budget_bytes = _int(budget.get("bytes")) if isinstance(budget, Mapping) else None
    roles = budget.get("roles") if isinstance(budget, Mapping) else None
    bars = []
    for role, fact in sorted((paths or {}).items()) if isinstance(paths, Mapping) else []:
        if not isinstance(fact, Mapping):
            continue
        space = _mapping(fact.get("space"))
        mount = _mapping(fact.get("mount"))
        counted = roles is None or (isinstance(roles, list) and role in roles)
        bars.append(
            MountBar(
                role=_text(role),
                path=_text(fact.get("path")),
                mount_point=_text(mount.get("mount_point")),
                bytes_total=_int(space.get("bytes_total")),
                bytes_free=_int(space.get("bytes_free")),
                budget_bytes=(budget_bytes or 0) if counted else 0,
                inodes_total=_int(space.get("inodes_total")),
                inodes_free=_int(space.get("inodes_free")),
            )
        )
    return bars


def _verify(
    verify: Mapping[str, Any] | None,
) -> tuple[list[Mapping[str, Any]], str | None, int]:
    """The rows verify listed, its root, and how many files it read in all (a text run lists
    only the first ok files)."""
    block = verify.get("verify") if verify else None
    if not isinstance(block, Mapping):
        return [], None, 0
    files = block.get("files")
    rows = [f for f in files if isinstance(f, Mapping)] if isinstance(files, list) else []
    total = block.get("files_total")
    total = total if isinstance(total, int) and total >= len(rows) else len(rows)
    return rows, _text(block.get("root")) or None, total


_SEVERITY_ORDER = {"error": 0, "warning": 1, "note": 2}


def _number(value: Any) -> float | None:
    import math

    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _watch_history(
    report: Mapping[str, Any] | None,
) -> tuple[tuple[float, int | None, float | None, float | None], ...]:
    rows = _mapping(report).get("watch_history")
    points = []
    for raw in rows[-2000:] if isinstance(rows, list) else []:
        row = _mapping(raw)
        when = _number(row.get("time"))
        if when is not None:
            points.append(
                (
                    when,
                    _int(row.get("step")),
                    _number(row.get("disk_used_pct")),
                    _number(row.get("inodes_used_pct")),
                )
            )
    start = points[0][0] if points else 0.0
    return tuple((when - start, step, disk, inodes) for when, step, disk, inodes in points)


def _points(value: Any) -> tuple[tuple[int, float], ...]:
    import math

    found = []
    for pair in value if isinstance(value, list) else []:
        if isinstance(pair, list) and len(pair) == 2:
            step, loss = _int(pair[0]), pair[1]
            finite = isinstance(loss, (int, float)) and not isinstance(loss, bool)
            if step is not None and finite and math.isfinite(loss):
                found.append((step, float(loss)))
    return tuple(found[:2000])


def _resume(report: Mapping[str, Any] | None) -> list[ResumeScenario]:
    block = _mapping(_mapping(report).get("resume"))
    scenarios = block.get("scenarios")
    runs = [r for r in block.get("runs") or [] if isinstance(r, Mapping)]
    signals = [_text(r.get("signal_sent")) or None for r in runs if r.get("label") != "reference"]
    items = [s for s in scenarios if isinstance(s, Mapping)] if isinstance(scenarios, list) else []
    last = max((_int(s.get("relaunch_last_step")) or 0 for s in items), default=0) or None
    found = []
    for s in items:
        named = _text(s.get("scenario"))
        signal = next((sig for sig in signals if sig and sig in named), None)
        found.append(
            ResumeScenario(
                name=named,
                ran=bool(s.get("ran")),
                killed_after=_int(s.get("killed_after_step")),
                durable=_int(s.get("durable_checkpoint_step")),
                relaunch_first=_int(s.get("relaunch_first_step")),
                relaunch_last=_int(s.get("relaunch_last_step")),
                compared=_int(s.get("compared_steps")),
                first_mismatch=_int(s.get("first_mismatch")),
                relaunch_failed=bool(s.get("relaunch_failed")),
                signal=signal,
                reference_last=last,
                losses={
                    run: _points(points)
                    for run, points in _mapping(s.get("losses")).items()
                    if run in ("reference", "killed", "relaunch") and _points(points)
                },
            )
        )
    return found


# Where each gate's last report says how long it took: (gate, block, key).
_DURATIONS = (
    ("smoke", "smoke", "duration_s"),
    ("resume", "resume", "duration_s"),
    ("pull", "pull", "seconds"),
    ("verify", "verify", "seconds"),
)


def _durations(reports: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, float]]:
    """How long each gate's last run took, as its report says (a pull's verify counts as
    verify when no verify report of its own is kept)."""
    found: dict[str, float] = {}
    for gate, block, key in _DURATIONS:
        for source in (gate, "pull") if block == "verify" else (gate,):
            value = _mapping(_mapping(reports.get(source)).get(block)).get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                found.setdefault(gate, float(value))
    watch = _mapping(reports.get("watch")).get("round_trip_s")
    if isinstance(watch, (int, float)) and not isinstance(watch, bool) and watch >= 0:
        found["watch (probe)"] = float(watch)
    return list(found.items())


def _verify_report(
    reports: Mapping[str, Mapping[str, Any]], mtimes: Mapping[str, float]
) -> tuple[Mapping[str, Any] | None, str]:
    """The one report verify's section is drawn from, and its gate: ``rentcheck pull``
    verifies too and keeps its table in the pull report, so the newer of the two."""
    candidates = [
        (mtimes.get(gate, 0.0), gate)
        for gate in ("verify", "pull")
        if isinstance(_mapping(reports.get(gate)).get("verify"), Mapping)
    ]
    if not candidates:
        return None, "verify"
    _, gate = max(candidates)
    return reports[gate], gate


def _rule_groups(reports: Mapping[str, Mapping[str, Any]]) -> list[RuleGroup]:
    from rentcheck.registry import all_rules
    from rentcheck.report.ruledoc import doc_url

    known = all_rules()
    grouped: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for gate, report in reports.items():
        results = report.get("results")
        for entry in results if isinstance(results, list) else []:
            if isinstance(entry, Mapping) and isinstance(entry.get("code"), str):
                grouped.setdefault(entry["code"], []).append((gate, entry))
    groups = []
    for code, found in grouped.items():
        rule = known.get(code)
        worst = min(
            (_text(f.get("severity")) for _, f in found),
            key=lambda s: _SEVERITY_ORDER.get(s, 3),
        )
        groups.append(
            RuleGroup(
                code=code,
                name=rule.name if rule is not None else None,
                severity=worst,
                doc_url=doc_url(code, known),  # from our own table, never from the data
                findings=tuple(found),
            )
        )
    return sorted(groups, key=lambda g: (_SEVERITY_ORDER.get(g.severity, 3), g.code))


def _gate_states(entries: Sequence[Mapping[str, Any]]) -> list[GateState]:
    from rentcheck.gates.table import all_gates

    latest: dict[str, Mapping[str, Any]] = {}
    for line in entries:
        latest[str(line.get("gate"))] = line
    states = []
    for gate in sorted(all_gates(), key=lambda g: g.phase_index):
        entry = latest.get(gate.name)
        states.append(
            GateState(
                name=gate.name,
                phase=gate.phase,
                verdict=None if entry is None else _text(entry.get("verdict")),
                time=None if entry is None else _text(entry.get("time")),
                host=None if entry is None or entry.get("host") is None else _text(entry["host"]),
            )
        )
    return states


def gather(root: str, inputs: Sequence[str] = ()) -> Lifecycle:
    """The ledger and last reports of the project at ``root``; ``inputs`` (JSON report files)
    replace the kept report of the gate each one names."""
    import os
    import time

    from rentcheck import __version__
    from rentcheck.ledger import read_ledger
    from rentcheck.report.lastrun import last_reports, read_report

    ledger = read_ledger(root)
    reports, problems = last_reports(root)
    problems = [*ledger.problems, *problems]
    named: set[str] = set()
    for path in inputs:
        document = read_report(path, problems)
        if document is not None:
            gate = document.get("gate")
            name = gate.get("name") if isinstance(gate, Mapping) else None
            gate_name = _text(name or document.get("command") or path)
            reports[gate_name] = document
            named.add(gate_name)
    audit = reports.get("audit")
    mtimes = _kept_times(root)
    for gate in named:  # named on the command line: newer than anything kept
        mtimes[gate] = float("inf")
    verify_report, verify_via = _verify_report(reports, mtimes)
    files, verify_root, verify_total = _verify(verify_report)
    return Lifecycle(
        project=os.path.abspath(root),
        generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        version=__version__,
        gates=_gate_states(ledger.entries),
        entries=ledger.entries,
        reports=reports,
        mounts=_mounts(audit),
        audit_host=None if not audit else (_text(audit.get("host")) or None),
        verify_files=files,
        verify_root=verify_root,
        verify_total=verify_total,
        verify_via=verify_via,
        rules=_rule_groups(reports),
        problems=problems,
        resume=_resume(reports.get("resume")),
        durations=_durations(reports),
        watch_history=_watch_history(reports.get("watch")),
        watch_host=_text(_mapping(_mapping(reports.get("watch")).get("watch")).get("host")) or None,
        smoke_losses=_points(_mapping(_mapping(reports.get("smoke")).get("smoke")).get("losses")),
    )


def _kept_times(root: str) -> dict[str, float]:
    """When each gate's kept report was written (its file's mtime)."""
    import contextlib
    import os

    from rentcheck.report.lastrun import LAST_DIR

    times: dict[str, float] = {}
    for gate in ("verify", "pull"):
        with contextlib.suppress(OSError):
            times[gate] = os.stat(os.path.join(root, LAST_DIR, f"{gate}.json")).st_mtime
    return times

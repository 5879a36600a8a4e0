"""The watch gate on one box: probe the launched job, judge it against the state kept in
``.rentcheck/watch/``, keep the new state; the CLI, the fleet and the pytest item call it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rentcheck.box.transport import Box
    from rentcheck.box.watch import WatchOutcome
    from rentcheck.config import Config
    from rentcheck.gates.judge import GateResult

__all__ = [
    "WatchRun",
    "last_launch_session",
    "watch_evidence",
    "watch_result",
    "watch_runner",
    "with_ledger_session",
]


@dataclass
class WatchRun:
    result: GateResult
    outcome: WatchOutcome


def _state_path(root: str, host: str, session: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{host}-{session}")
    return os.path.join(root, ".rentcheck", "watch", safe + ".json")


def _read_state(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def watch_result(config: Config, host: str, given: dict[str, Any], box: Box) -> WatchRun:
    """One watch: probe, judge against the saved state, save the new state."""
    from rentcheck.atomic import write_atomic
    from rentcheck.box.jobfacts import gather_job
    from rentcheck.box.launch import job_dir
    from rentcheck.box.launch_settings import watch_settings
    from rentcheck.box.watch import judge_watch
    from rentcheck.gates.judge import GateResult

    settings = watch_settings(config, given)
    path = _state_path(os.path.abspath(config.root), host, settings.session)
    previous = _read_state(path)
    request: dict[str, Any] = {
        "job_dir": job_dir(settings.session),
        "patterns": list(settings.step_patterns),
        "log_offset": (previous or {}).get("offset"),
        "disk_paths": dict(settings.disk_paths),
        "disk_of_job": True,
        "memory": True,
        "gpu": settings.gpu,
        "tail_lines": 5,
    }
    facts = gather_job(box, request, settings.timeout)
    outcome = judge_watch(facts, previous, settings, host)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    outcome.event["changed"] = (previous or {}).get("health") != outcome.health or (
        (previous or {}).get("codes") != outcome.event["codes"]
    )
    outcome.state["codes"] = outcome.event["codes"]
    history = _history(previous, outcome.state, facts, outcome.health)
    outcome.state["history"] = history
    write_atomic(path, json.dumps(outcome.state, sort_keys=True).encode())
    result = GateResult(
        "watch",
        outcome.findings,
        host=host,
        extras={
            "watch": outcome.event,
            "round_trip_s": facts.get("round_trip_s"),
            "watch_history": history,
        },
        seen={"jobs": 1 if isinstance(facts.get("status"), dict) else 0},
        evidence=watch_evidence(facts),
    )
    result.headline = (outcome.line,)
    return WatchRun(result, outcome)


PATH_MAX = 4096  # a longer path cannot be opened on Linux: it names nothing to keep


def watch_evidence(facts: dict[str, Any]) -> dict[str, str]:
    """What this watch saw on the box that teardown must find covered by the verified pull:
    the job's session, the checkpoint directory the probe looked in and its newest file.
    The box's own words (its status file may name a directory the ledger's launch did not:
    a relaunch, a job started from another project), kept as text for teardown to ask the
    box about again; never used here as a path."""
    evidence: dict[str, str] = {}
    status = facts.get("status")
    session = status.get("session") if isinstance(status, dict) else None
    if isinstance(session, str) and session:
        evidence["session"] = session[:PATH_MAX]
    checkpoint = facts.get("checkpoint")
    newest = checkpoint.get("newest") if isinstance(checkpoint, dict) else None
    places = (
        ("checkpoint_dir", checkpoint.get("dir") if isinstance(checkpoint, dict) else None),
        ("newest_checkpoint", newest.get("path") if isinstance(newest, dict) else None),
    )
    for key, value in places:
        if isinstance(value, str) and value and len(value) <= PATH_MAX and "\0" not in value:
            evidence[key] = value
    return evidence


HISTORY = 500  # watches kept per launch: the report draws step and headroom over time


def _history(
    previous: dict[str, Any] | None, state: dict[str, Any], facts: dict[str, Any], health: str
) -> list[dict[str, Any]]:
    """This launch's watches so far, this one last: time, step, worst disk and inode use."""
    kept = (previous or {}).get("history")
    same_launch = (previous or {}).get("start_ticks") == state.get("start_ticks")
    history = list(kept)[-(HISTORY - 1) :] if isinstance(kept, list) and same_launch else []
    disk = facts.get("disk")
    used: list[float] = []
    inodes: list[float] = []
    for space in disk.values() if isinstance(disk, dict) else []:
        total, free = space.get("bytes_total") or 0, space.get("bytes_free") or 0
        itotal, ifree = space.get("inodes_total") or 0, space.get("inodes_free") or 0
        if total:
            used.append(round(100.0 * (total - free) / total, 2))
        if itotal:
            inodes.append(round(100.0 * (itotal - ifree) / itotal, 2))
    step = state.get("step")
    history.append(
        {
            "time": facts.get("now"),
            "step": step if isinstance(step, int) else None,
            "disk_used_pct": max(used, default=None),
            "inodes_used_pct": max(inodes, default=None),
            "health": health,
        }
    )
    return history


def watch_runner(config: Config, options: dict[str, Any]) -> GateResult:
    """The pytest item of the watch gate (``--rentcheck-gate watch``): one watch."""
    from rentcheck.box.launch_gate import open_for_options
    from rentcheck.errors import UsageError

    host = options.get("host")
    if not host:
        raise UsageError("the watch gate needs a host", hint="pytest --rentcheck-audit HOST")
    name = options.get("name") or host  # its state file and findings go by the name
    given, _ = with_ledger_session(config, name, {})
    return watch_result(config, name, given, open_for_options(options)).result


def with_ledger_session(
    config: Config, host: str, given: dict[str, Any]
) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """``given`` with the session to watch: the command line's, else the config's, else the
    one the ledger says was launched on ``host`` last (returned too, to say so)."""
    if given.get("session") or config.section("watch").get("session"):
        return given, None
    found = last_launch_session(config, host)
    return ({**given, "session": found[0]}, found) if found else (given, None)


def last_launch_session(config: Config, host: str) -> tuple[str, str] | None:
    """The session of the last launch on ``host`` in the project's ledger, and when it was."""
    from rentcheck.ledger import read_ledger

    for entry in reversed(read_ledger(os.path.abspath(config.root)).entries):
        if entry.get("gate") != "launch" or entry.get("host") != host:
            continue
        evidence = entry.get("evidence")
        session = evidence.get("session") if isinstance(evidence, dict) else None
        if isinstance(session, str) and session:
            return session, str(entry.get("time") or "?")
    return None

"""The watch gate's judgement (pure): one job probe's facts + the last watch's state ->
findings, the new state and the one status line.

Alive is pid + start time + boot id (the job probe); "advancing" is the log's size and last
step against the previous watch's; OOM kills and Xid lines are compared with the first
watch's baseline, so kills from before the launch never count.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rentcheck.box.launch_check import finding, no_job
from rentcheck.box.launch_rules import DEAD_CODES
from rentcheck.box.launch_settings import WatchSettings
from rentcheck.model import Finding, Severity

__all__ = ["WatchOutcome", "judge_watch"]

_TIMED_OUT = ("timed out", "no answer within")
_THROTTLES = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake")


@dataclass
class WatchOutcome:
    findings: list[Finding]
    state: dict[str, Any]
    line: str
    health: str  # OK, DEGRADED, DEAD, FINISHED
    event: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return {"OK": 0, "FINISHED": 0, "DEGRADED": 1}.get(self.health, 3)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _gpus(facts: Mapping[str, Any]) -> list[dict[str, str]]:
    query = (facts.get("gpu") or {}).get("query") or {}
    names = query.get("fields") or []
    rows = []
    for line in str(query.get("csv") or "").splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(names):
            rows.append(dict(zip(names, values, strict=True)))
    return rows


def _disk(
    facts: Mapping[str, Any], settings: WatchSettings, host: str
) -> tuple[list[Finding], str]:
    found = []
    worst_bytes = worst_inodes = None
    for role, space in sorted((facts.get("disk") or {}).items()):
        total, free = space.get("bytes_total") or 0, space.get("bytes_free") or 0
        itotal, ifree = space.get("inodes_total") or 0, space.get("inodes_free") or 0
        used = 100.0 * (total - free) / total if total else 0.0
        iused = 100.0 * (itotal - ifree) / itotal if itotal else 0.0
        worst_bytes = max(worst_bytes or 0.0, used)
        worst_inodes = max(worst_inodes or 0.0, iused)
        if max(used, iused) >= settings.disk_max_used:
            found.append(
                finding(
                    "RC356",
                    f"{role} ({space.get('path')}): {used:.0f}% of bytes and {iused:.0f}% of "
                    f"inodes used (bound {settings.disk_max_used:g}%)",
                    host,
                    path=space.get("path"),
                )
            )
    text = ""
    if worst_bytes is not None:
        text = f"disk {worst_bytes:.0f}% inodes {worst_inodes:.0f}%"
    return found, text


def _gpu(facts: Mapping[str, Any], state: dict[str, Any], host: str) -> tuple[list[Finding], str]:
    gpu = facts.get("gpu") or {}
    rows = _gpus(facts)
    found = []
    for row in rows:
        active = [
            k.split(".")[-1] for k, v in row.items() if k.endswith(_THROTTLES) and v == "Active"
        ]
        if active:
            found.append(
                finding("RC358", f"GPU {row.get('index')} throttles: {', '.join(active)}", host)
            )
    xids = gpu.get("xid_lines")
    if isinstance(xids, list):
        seen = state.setdefault("xid_baseline", len(xids))
        if len(xids) > seen:
            found.append(finding("RC358", f"new Xid lines: {xids[-1][:200]}", host))
    utils = [row.get("utilization.gpu", "") for row in rows]
    return found, ("gpu " + "/".join(f"{u}%" for u in utils)) if utils else ""


def _progress(
    facts: Mapping[str, Any], state: dict[str, Any], settings: WatchSettings, host: str, alive: bool
) -> tuple[list[Finding], str]:
    log = facts.get("log") or {}
    found: list[Finding] = []
    now = float(facts.get("now") or time.time())
    last = (log.get("last_step") or {}).get("step")
    previous = state.get("step")
    if last is None:
        last = previous
    text = f"step {last}" if last is not None else "no step yet"
    if last is not None and previous is not None:
        text += f" ({last - previous:+d})"
    if log:
        state["offset"] = log.get("size")
        state["step"] = last
        stalled = now - float(log.get("mtime") or now)
        if alive and stalled > settings.stall_after:
            tail = " | ".join(log.get("tail") or [])[-300:]
            found.append(
                finding(
                    "RC354",
                    f"{log.get('path')} has not changed for {_ago(stalled)} (bound "
                    f"{_ago(settings.stall_after)}); last lines: {tail}",
                    host,
                )
            )
    ckpt = (facts.get("checkpoint") or {}).get("newest")
    if ckpt:
        age = now - float(ckpt.get("mtime") or now)
        text += f" ckpt {_ago(age)} ago"
        bound = settings.checkpoint_max_age
        if alive and bound is not None and age > bound:
            found.append(
                finding(
                    "RC355",
                    f"newest checkpoint {ckpt.get('path')} is {_ago(age)} "
                    f"old (bound {_ago(bound)})",
                    host,
                )
            )
    elif facts.get("checkpoint") is not None:
        text += " no ckpt"
    return found, text


def _ended(
    facts: Mapping[str, Any], settings: WatchSettings, host: str, step: int | None
) -> list[Finding]:
    status = facts["status"]
    proc = facts.get("process") or {}
    log = facts.get("log") or {}
    tail = " | ".join(log.get("tail") or [])[-400:]
    ckpt = (facts.get("checkpoint") or {}).get("newest") or {}
    newest = f"; newest checkpoint {ckpt.get('path')}" if ckpt else "; no checkpoint"
    if "exit_status" in status:
        code = status["exit_status"]
        took = float(status.get("ended_at", 0)) - float(status.get("started_at", 0))
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(status.get("ended_at", 0))))
        if code != 0:
            return [
                finding(
                    "RC351",
                    f"exited with status {code} at {when} UTC after "
                    f"{_ago(took)}, at step {step}{newest}; log tail: {tail}",
                    host,
                    exit_status=code,
                )
            ]
        found = [
            finding(
                "RC353",
                f"finished with status 0 at {when} UTC after {_ago(took)}, at step {step}{newest}",
                host,
                exit_status=0,
                step=step,
            )
        ]
        expected = settings.expected_duration
        if expected and took < expected / 2:
            found.append(
                finding(
                    "RC352",
                    f"finished after {_ago(took)}, under half the expected {_ago(expected)}",
                    host,
                )
            )
        return found
    if proc.get("alive"):
        return []
    since = log.get("mtime")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(since))) if since else "unknown"
    return [
        finding(
            "RC350",
            f"{proc.get('reason')}, no exit status; the log last changed {when} UTC"
            f"{newest}; log tail: {tail}",
            host,
            since=since,
        )
    ]


def judge_watch(
    facts: Mapping[str, Any], previous: Mapping[str, Any] | None, settings: WatchSettings, host: str
) -> WatchOutcome:
    """Findings, the state to keep, and the status line of one watch."""
    state: dict[str, Any] = dict(previous or {})
    clock = time.strftime("%H:%M", time.localtime())
    missing = no_job(facts, host, settings.session)
    if missing is not None:
        line = f"{clock} {host} no job {settings.session} DEAD"
        event = {"time": facts.get("now"), "host": host, "session": settings.session,
                 "health": "DEAD", "line": line, "codes": [missing.code]}  # fmt: skip
        return WatchOutcome([missing], state, line, "DEAD", event)
    status = facts["status"]
    if state.get("start_ticks") != status.get("start_ticks"):  # a new launch: a new baseline
        state = {"start_ticks": status.get("start_ticks"), "pid": status.get("pid")}
    proc = facts.get("process") or {}
    alive = bool(proc.get("alive")) and "exit_status" not in status
    progress, text = _progress(facts, state, settings, host, alive)
    found = _ended(facts, settings, host, state.get("step"))
    if not proc.get("alive") and proc.get("group_alive"):
        found.append(
            finding(
                "RC360",
                f"wrapper pid {status.get('pid')} gone, "
                f"{proc['group_alive']} processes of its group still run",
                host,
            )
        )
    disk, disk_text = _disk(facts, settings, host)
    gpu, gpu_text = _gpu(facts, state, host)
    found += progress + disk + gpu
    oom = (facts.get("memory") or {}).get("oom_kill")
    if isinstance(oom, int):
        base = state.setdefault("oom_baseline", oom)
        if oom > base:
            found.append(finding("RC357", f"oom_kill {oom}, was {base} at the first watch", host))
    for entry in facts.get("unreadable") or []:
        why = str(entry.get("why", ""))
        if any(word in why for word in _TIMED_OUT):
            found.append(finding("RC359", f"{entry.get('fact')}: {why}", host))
    codes = {f.code for f in found}
    if codes & DEAD_CODES:
        health = "DEAD"
    elif any(f.severity >= Severity.WARNING for f in found):
        health = "DEGRADED"
    elif "RC353" in codes:
        health = "FINISHED"
    else:
        health = "OK"
    parts = [clock, host, text, disk_text, gpu_text, health]
    line = " ".join(p for p in parts if p)
    state["health"] = health
    event = {
        "time": facts.get("now"),
        "host": host,
        "session": settings.session,
        "health": health,
        "line": line,
        "codes": sorted(codes),
    }
    return WatchOutcome(found, state, line, health, event)

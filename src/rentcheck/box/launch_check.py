"""The launch gate's judgement (pure, over the job probe's facts): alive by pid and start
time, its own session, a first step line in time, no traceback at the head of the log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rentcheck.box.launch_rules import RULES_BY_CODE
from rentcheck.model import Finding

__all__ = ["finding", "launch_findings", "no_job"]


def finding(code: str, message: str, host: str, **details: Any) -> Finding:
    return RULES_BY_CODE[code].finding(message, host=host, details=details)


def no_job(facts: Mapping[str, Any], host: str, session: str) -> Finding | None:
    if facts.get("status"):
        return None
    why = "; ".join(
        u.get("why", "") for u in facts.get("unreadable") or [] if u.get("fact") == "status"
    )
    return finding(
        "RC335",
        f"no job of session {session!r} on {host} ({facts.get('job_dir')}/status: {why})",
        host,
        session=session,
    )


def _tail(facts: Mapping[str, Any]) -> str:
    lines = (facts.get("log") or {}).get("tail") or []
    return " | ".join(lines[-3:])


def launch_findings(
    facts: Mapping[str, Any], host: str, session: str, wait_s: float
) -> list[Finding]:
    """What is wrong with the job right after its launch (or at ``launch-check``)."""
    missing = no_job(facts, host, session)
    if missing is not None:
        return [missing]
    status = facts["status"]
    proc = facts.get("process") or {}
    log = facts.get("log") or {}
    found: list[Finding] = []
    pid = status.get("pid")
    if "exit_status" in status:
        found.append(
            finding(
                "RC334",
                f"session {session!r} exited with status {status['exit_status']} "
                f"{int(status.get('ended_at', 0)) - int(status.get('started_at', 0))} s after "
                f"the start; log tail: {_tail(facts)}",
                host,
                exit_status=status["exit_status"],
            )
        )
    elif not proc.get("alive"):
        found.append(
            finding(
                "RC330",
                f"session {session!r}: {proc.get('reason')}; log tail: {_tail(facts)}",
                host,
                pid=pid,
            )
        )
    elif proc.get("sid") != pid:
        found.append(
            finding(
                "RC331",
                f"pid {pid} runs in session {proc.get('sid')} (not its own): a hang-up of that "
                "session kills it",
                host,
                pid=pid,
            )
        )
    if log.get("traceback_at_head"):
        head = " | ".join(str(log["traceback_at_head"]).splitlines()[-2:])
        found.append(finding("RC333", f"{log.get('path')}: traceback at the head: {head}", host))
    if not log.get("first_step") and "exit_status" not in status and proc.get("alive"):
        found.append(
            finding(
                "RC332",
                f"{log.get('path') or status.get('log')}: no step line within {wait_s:g} s "
                f"of the launch; last lines: {_tail(facts) or '(empty)'}",
                host,
            )
        )
    return found

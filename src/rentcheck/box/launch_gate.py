"""The launch gate on a launched job: one job-probe exec, waiting for its first step; the
CLI's launch and launch-check and the pytest item call it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rentcheck.box.transport import Box
    from rentcheck.config import Config
    from rentcheck.gates.judge import GateResult

__all__ = [
    "check_job",
    "job_extras",
    "launch_check_result",
    "launch_check_runner",
    "open_for_options",
    "status_evidence",
]


def check_job(
    box: Box, host: str, session: str, wait: float, patterns: tuple[str, ...]
) -> tuple[list[Any], dict[str, Any]]:
    """The launch gate on a launched job: one job-probe exec, waiting for a first step."""
    from rentcheck.box.jobfacts import gather_job
    from rentcheck.box.launch import job_dir
    from rentcheck.box.launch_check import launch_findings

    request = {"job_dir": job_dir(session), "patterns": list(patterns), "wait_first_step": wait}
    facts = gather_job(box, request, wait + 30.0)
    return launch_findings(facts, host, session, wait), facts


def job_extras(facts: dict[str, Any]) -> dict[str, Any]:
    log = facts.get("log") or {}
    return {
        "status": facts.get("status"),
        "process": facts.get("process"),
        "first_step": log.get("first_step"),
        "log_tail": log.get("tail"),
        "unreadable": facts.get("unreadable"),
    }


def status_evidence(facts: dict[str, Any]) -> dict[str, str]:
    status = facts.get("status") or {}
    keys = {
        "session": "session",
        "pid": "pid",
        "pgid": "pgid",
        "start_ticks": "start_ticks",
        "started_at": "started_at",
        "command_sha256": "command_sha256",
        "log": "log",
        "ckpt_dir": "checkpoint_dir",
    }
    return {name: str(status[key]) for key, name in keys.items() if status.get(key) is not None}


def launch_check_result(
    config: Config, host: str, session: str | None, wait: float | None, box: Box
) -> GateResult:
    from rentcheck.box.launch_settings import launch_settings
    from rentcheck.gates.judge import GateResult

    settings = launch_settings(config, {"session": session, "first_step_timeout": wait})
    findings, facts = check_job(
        box, host, settings.session, settings.first_step_timeout, settings.step_patterns
    )
    proc = facts.get("process") or {}
    result = GateResult(
        "launch",
        findings,
        extras={"job": job_extras(facts)},
        host=host,
        evidence=status_evidence(facts),
        seen={"jobs": 1 if proc.get("alive") else 0},
    )
    result.headline = (
        f"launch-check {host} session {settings.session}: "
        + ("alive" if proc.get("alive") else "not alive"),
    )
    return result


def launch_check_runner(config: Config, options: dict[str, Any]) -> GateResult:
    """The pytest item of the launch gate (``--rentcheck-gate launch``): launch-check."""
    from rentcheck.errors import UsageError

    host = options.get("host")
    if not host:
        raise UsageError("the launch gate needs a host", hint="pytest --rentcheck-audit HOST")
    name = options.get("name") or host  # an inventory host's name; host is its alias
    return launch_check_result(config, name, None, None, open_for_options(options))


def open_for_options(options: dict[str, Any]) -> Box:
    """The box a pytest item's runner connects to (``--rentcheck-ssh-config`` included)."""
    from rentcheck.box.transport import open_box

    return open_box(options["host"], ssh_config=options.get("ssh_config"))

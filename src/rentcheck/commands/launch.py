"""``rentcheck launch`` and ``rentcheck launch-check``: phase 2 (watch is ``commands.watch``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rentcheck.commands.box_options import config_of, connection_options, open_for
from rentcheck.commands.finish import add_force_options, finish, force_reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    launch = sub.add_parser(
        "launch",
        parents=[common],
        help="start a command on a box, detached (tmux or setsid), and prove it is alive",
        description="Start CMD detached on the box: stdin /dev/null, output to the log, "
        "unbuffered Python, only the --env variables added (over stdin, never argv). Then "
        "the launch gate: alive by pid + start time, its own session, a first step line, no "
        "traceback. Refuses before starting anything when a prerequisite gate is missing.",
        epilog="Exit 0 launched and alive, 1 findings (or refused), 2 error.",
    )
    connection_options(launch, required=False)
    launch.add_argument("--log", metavar="PATH", help="log file on the box (appended to)")
    launch.add_argument("--cwd", metavar="DIR", help="working directory on the box (~)")
    launch.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="export this variable "
        "from here into the job (repeatable); its value never appears in argv",
    )
    launch.add_argument("--ckpt-dir", metavar="DIR", help="the job's checkpoint directory")
    launch.add_argument("--detach", choices=("auto", "tmux", "setsid"), help="how (auto)")
    launch.add_argument(
        "--first-step-timeout", type=float, metavar="S", help="wait this long for a step (60)"
    )
    add_force_options(launch)
    # REMAINDER: `rentcheck gate launch --host H -- CMD --flag` hands CMD over without `--`.
    launch.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command to start"
    )
    launch.set_defaults(handler=run_launch)

    check = sub.add_parser(
        "launch-check",
        parents=[common],
        help="the launch gate alone: is the launched job alive, detached, stepping",
    )
    connection_options(check)
    check.add_argument(
        "--first-step-timeout", type=float, metavar="S", help="wait this long for a step (60)"
    )
    add_force_options(check)
    check.set_defaults(handler=run_launch_check)


def _script_paths(argv: list[str], cwd: str, home: str | None) -> set[str]:
    """The scripts a command runs (its ``*.sh``/``*.py`` words), as absolute box paths."""
    import posixpath

    if cwd.startswith("~"):
        if not home:
            return set()
        cwd = home + cwd[1:]
    found = set()
    for word in argv:
        if word.endswith((".sh", ".bash", ".py")) and not word.startswith("-"):
            found.add(posixpath.normpath(posixpath.join(cwd, posixpath.expanduser(word))))
    return found


def _edited_scripts(box: Box, argv: list[str], cwd: str, timeout: float) -> list[Any]:
    """RC401/RC402 on the scripts CMD runs, from one probe exec (reusing the audit's rules)."""
    import posixpath

    from rentcheck.box.facts import gather_facts
    from rentcheck.box.mutation import mutation_findings

    roots = {posixpath.dirname(p) for p in _script_paths(argv, cwd, "/") if p.startswith("/")}
    request = {"paths": {}, "sections": ["host", "live_scripts"], "budget_s": timeout * 0.8}
    request["script_roots"] = sorted(roots) or ["/"]
    facts = gather_facts(box, request, timeout)
    ours = _script_paths(argv, cwd, (facts.get("host") or {}).get("home"))
    return [f for f in mutation_findings(facts, box.name) if (f.details or {}).get("file") in ours]


def run_launch(args: argparse.Namespace) -> int:
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.launch_gate import check_job, job_extras
    from rentcheck.box.launch_settings import launch_settings
    from rentcheck.box.transport import close_all
    from rentcheck.errors import UsageError
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.gates.table import gate_named
    from rentcheck.record import replace
    from rentcheck.registry import all_rules

    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    config = config_of(args)
    given = {
        "session": args.session,
        "log": args.log,
        "cwd": args.cwd,
        "env": tuple(args.env),
        "checkpoint_dir": args.ckpt_dir,
        "detach": args.detach,
        "first_step_timeout": args.first_step_timeout,
    }
    settings = launch_settings(config, given)
    row = gate_named("launch")
    if not args.command:  # `rentcheck gate launch`: the prerequisites only, recorded "ready"
        row = replace(row, planned=True)
    run = GateRun(config, row, host=args.host, force_reason=force_reason(args))
    rules = all_rules()
    ready = run.precheck()
    if not ready or not args.command:  # refuse before anything is started
        result = GateResult("launch", [], host=args.host)
        result.headline = (
            f"launch: nothing started on {args.host}: a prerequisite is missing"
            if not ready
            else "launch: the prerequisites hold; nothing started (no -- CMD given)",
        )
        return finish(args, run, result, command="launch", rules=rules)
    if not args.host:
        raise UsageError("launch needs --host", hint="rentcheck launch --host H -- CMD ARGS")
    plan = LaunchPlan(
        session=settings.session,
        argv=tuple(args.command),
        log=settings.log,
        cwd=settings.cwd,
        ckpt_dir=settings.checkpoint_dir,
        env_names=settings.env,
        detach=settings.detach,
    )
    try:
        box = open_for(args, args.host)
        edited = _edited_scripts(box, list(plan.argv), plan.cwd, settings.timeout)
        if edited:
            result = GateResult("launch", edited, host=args.host)
            result.headline = (
                f"launch: not started on {args.host}: a script it runs is being changed in place",
            )
            return finish(args, run, result, command="launch", rules=rules)
        launched = start_job(box, plan, os.environ, timeout=settings.timeout)
        wait = settings.first_step_timeout
        findings, facts = check_job(box, args.host, plan.session, wait, settings.step_patterns)
        alive = bool((facts.get("process") or {}).get("alive"))
    finally:
        close_all()
    result = GateResult(
        "launch",
        findings,
        extras={"launch": vars(launched), "job": job_extras(facts)},
        seen={"jobs": 1 if alive else 0},
        host=args.host,
        evidence=launched.evidence(),
    )
    first = (facts.get("log") or {}).get("first_step") or {}
    result.headline = (
        f"launched on {args.host} as pid {launched.pid} ({launched.detach} session "
        f"{plan.session}), log {launched.log}",
        f"first step: {first.get('line')}" if first else "first step: none yet",
    )
    return finish(args, run, result, command="launch", rules=rules)


def run_launch_check(args: argparse.Namespace) -> int:
    from rentcheck.box.launch_gate import launch_check_result
    from rentcheck.box.transport import close_all
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    config = config_of(args)
    run = GateRun(config, "launch", host=args.host, force_reason=force_reason(args))
    if not run.precheck():
        result = GateResult("launch", [], host=args.host)
    else:
        try:
            box = open_for(args, args.host)
            result = launch_check_result(
                config, args.host, args.session, args.first_step_timeout, box
            )
        finally:
            close_all()
    return finish(args, run, result, command="launch-check", rules=all_rules())

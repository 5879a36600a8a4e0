"""``rentcheck watch``: one probe of a launched job over one connection, one status line.

Meant for cron (one call) or ``--every 10m --for 24h``; ``--hosts TAG|all`` watches the
inventory's hosts at once (``rentcheck.commands.fleet``) and prints one merged table. State
lives here, under
``.rentcheck/watch/`` (atomic writes); ``--jsonl`` appends each event; ``--on-change CMD``
runs a local command with the event on stdin when the health or the findings change.
Exit 0 healthy (or finished with status 0), 1 degraded, 3 dead or finished badly, 2 error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from rentcheck.commands.finish import add_force_options, force_reason, show
from rentcheck.config import Config

__all__ = ["add_parsers"]

ON_CHANGE_TIMEOUT = 30.0


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    from rentcheck.commands.box_options import connection_options

    watch = sub.add_parser(
        "watch",
        parents=[common],
        help="one probe of the launched job: alive, advancing, headroom, OOM, GPU; one line",
        description="Probe the job `rentcheck launch` started, in one exec with a server-side "
        "timeout, and print one status line. Exit 0 healthy or finished OK, 1 degraded, "
        "3 dead or finished badly, 2 error.",
        epilog="cron: */10 * * * * cd /path/project && rentcheck watch --host box "
        "--jsonl watch.jsonl",
    )
    # watch takes --host or --hosts (the inventory): run_watch asks for one of them.
    connection_options(watch, required=False)
    watch.add_argument(
        "--hosts",
        action="append",
        metavar="TAG",
        help="instead of --host: the inventory's hosts ([tool.rentcheck.hosts]): all, a tag or "
        "a name; watched at once, one merged table (repeatable)",
    )
    watch.add_argument(
        "--jobs",
        type=int,
        default=8,
        metavar="N",
        help="with --hosts: at most N hosts at a time (8; keeps a jump host's MaxSessions)",
    )
    watch.add_argument("--jsonl", metavar="FILE", help="append each event as one JSON line")
    watch.add_argument(
        "--on-change",
        metavar="CMD",
        help="run this local command (sh -c) with the event "
        "JSON on stdin when the health or the findings change",
    )
    watch.add_argument("--every", metavar="AGE", help="repeat at this interval (e.g. 10m)")
    watch.add_argument("--for", dest="for_", metavar="AGE", help="stop repeating after (24h)")
    watch.add_argument("--timeout", type=float, metavar="S", help="server-side limit (30)")
    watch.add_argument("--stall-after", metavar="AGE", help="log unchanged this long: degraded")
    watch.add_argument("--expected-duration", metavar="AGE", help="for the fast-finish check")
    add_force_options(watch)
    watch.set_defaults(handler=run_watch)


def _append_jsonl(path: str, event: dict[str, Any]) -> None:
    line = (json.dumps(event, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)  # one write of one line: concurrent appenders never interleave
    finally:
        os.close(fd)


def _notify(command: str, event: dict[str, Any]) -> None:
    import subprocess

    try:
        subprocess.run(
            ["sh", "-c", command],
            input=json.dumps(event).encode(),
            timeout=ON_CHANGE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"rentcheck: warning: --on-change ran past {ON_CHANGE_TIMEOUT:g} s\n")


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The watch settings the command line gives."""
    from rentcheck.gates.order import parse_age

    given: dict[str, Any] = {"session": args.session, "timeout": args.timeout}
    for key, value in (
        ("stall_after", args.stall_after),
        ("expected_duration", args.expected_duration),
    ):
        if value is not None:
            given[key] = parse_age(value)
    return given


def _session_default(args: argparse.Namespace, config: Config, given: dict[str, Any]) -> None:
    """Without ``--session`` or the config's: the last launch on the host (the ledger knows
    it), said aloud."""
    from rentcheck.box.watch_gate import with_ledger_session
    from rentcheck.sanitise import sanitise

    chosen, found = with_ledger_session(config, args.host, given)
    if found is None:
        return
    given.update(chosen)
    sys.stderr.write(
        f"rentcheck: watching session {sanitise(found[0])!r}: the last launch on "
        f"{sanitise(args.host)} (ledger, {sanitise(found[1])}); --session NAME to watch another\n"
    )


def _events(args: argparse.Namespace, event: dict[str, Any]) -> None:
    """--jsonl and --on-change for one host's watch event."""
    if args.jsonl:
        _append_jsonl(args.jsonl, event)
    if args.on_change and event.get("changed"):
        _notify(args.on_change, event)


def _fleet_once(args: argparse.Namespace, config: Config) -> int:
    from rentcheck.commands.fleet import run_fleet_watch

    code, outcomes = run_fleet_watch(args, config, _given(args))
    for outcome in outcomes:
        if outcome.result is not None:
            _events(args, outcome.result.extras["watch"])
    return code


def _once(args: argparse.Namespace, config: Config) -> int:
    from rentcheck.box.transport import close_all
    from rentcheck.box.watch_gate import watch_result
    from rentcheck.commands.box_options import open_for
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    given = _given(args)
    _session_default(args, config, given)
    run = GateRun(config, "watch", host=args.host, force_reason=force_reason(args))
    run.precheck()  # a missing launch is a finding; the job on the box is still probed
    try:
        watched = watch_result(config, args.host, given, open_for(args, args.host))
    finally:
        close_all()
    _events(args, watched.outcome.event)
    verdict = run.conclude(watched.result, exit_zero=args.exit_zero, rules=all_rules())
    code = show(args, run, watched.result, verdict, command="watch", rules=all_rules())
    # The judgement decides whether anything counts; the watch says how bad it is.
    return watched.outcome.exit_code if code else 0


def run_watch(args: argparse.Namespace) -> int:
    from rentcheck.commands.box_options import config_of
    from rentcheck.errors import UsageError
    from rentcheck.gates.order import parse_age

    config = config_of(args)
    if (args.host is None) == (args.hosts is None):
        raise UsageError(
            "watch needs --host HOST or --hosts TAG|all (one of them)",
            hint="e.g. rentcheck watch --host box, or --hosts all for the inventory",
        )
    once = _fleet_once if args.hosts else _once
    if args.every is None:
        if args.for_ is not None:
            raise UsageError("--for needs --every", hint="e.g. --every 10m --for 24h")
        return once(args, config)
    every = parse_age(args.every)
    until = time.monotonic() + parse_age(args.for_ or "24h")
    while True:
        code = once(args, config)
        # One dead job ends a single watch; a fleet keeps watching the others.
        if (code == 3 and not args.hosts) or time.monotonic() + every > until:
            return code
        sys.stdout.flush()
        time.sleep(every)

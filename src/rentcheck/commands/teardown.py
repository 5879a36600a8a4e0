"""``rentcheck teardown``: the Iron Law. Nothing is released until the pull was verified
against the box as it is now and the person approved the platform's meter-stop action; it
never runs that action. Exit 0 pass, 1 refused (findings), 2 unusable input."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rentcheck.commands.pull_options import config_for, connection_options
from rentcheck.config import Config

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    teardown = sub.add_parser(
        "teardown",
        parents=[common],
        help="the Iron Law: pass only if the pull is verified against the box as it is now, "
        "and the meter-stop action is approved",
        description="Never runs a platform command, never deletes. Re-reads the box now "
        "(--host) and compares it file by file, by content, with LOCAL_ROOT/PULL_VERIFIED.json: "
        "passes only when nothing was added or changed on the box since the pull, no local "
        "file changed since verify, and the meter-stop action was approved (--approve, or "
        "typing the platform's verb on a terminal) after reading what it destroys.",
    )
    teardown.add_argument(
        "--verified", required=True, metavar="LOCAL_ROOT", help="the verified pull (or its marker)"
    )
    now = teardown.add_mutually_exclusive_group()
    now.add_argument(
        "--host",
        help="re-read the box now over SSH (an ssh alias, or local): sizes and mtimes of every "
        "file, SHA-256 of any that differ",
    )
    now.add_argument(
        "--manifest-now",
        metavar="FILE",
        help="instead of --host: PULL_MANIFEST.json rebuilt on the box just now",
    )
    teardown.add_argument(
        "--remote-root",
        metavar="PATH",
        help="the result directory on the box (default: the one the pull recorded)",
    )
    teardown.add_argument(
        "--rehash",
        action="store_true",
        help="hash every file on the box and here, not only those whose size or mtime differ",
    )
    connection_options(teardown)
    teardown.add_argument("--profile", metavar="NAME", help="platform profile (teardown.profile)")
    teardown.add_argument(
        "--meter-stop", metavar="TEXT", help="the meter-stop action in your words (no profile)"
    )
    teardown.add_argument(
        "--approve", action="store_true", help="I have read what the meter-stop action destroys"
    )
    from rentcheck.commands.finish import add_force_options

    add_force_options(teardown)
    teardown.set_defaults(handler=run_teardown)


def run_teardown(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import finish, force_reason
    from rentcheck.gates.rules import ORDER_RULES
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.rules import RULES_BY_CODE
    from rentcheck.pull.teardown_gate import (
        TeardownRequest,
        teardown_manifest,
        teardown_result,
        verified_dir,
    )
    from rentcheck.pull.teardown_rules import TEARDOWN_RULES_BY_CODE

    config = config_for(args, untrusted=(verified_dir(args.verified),))
    reason = force_reason(args)
    request = TeardownRequest(
        verified=args.verified,
        host=args.host,
        manifest_now=args.manifest_now,
        remote_root=args.remote_root,
        profile=args.profile,
        meter_stop=args.meter_stop,
        approve=args.approve,
        rehash=args.rehash,
        ssh_config=args.ssh_config,
        connect_timeout=args.connect_timeout,
        timeout=args.timeout,
    )
    manifest = teardown_manifest(request)
    run = GateRun(config, "teardown", host=args.host, manifest=manifest, force_reason=reason)
    ask = _typed_verb if _can_ask(config) else None
    gate = teardown_result(config, request, run, ask=ask)
    rules = {**RULES_BY_CODE, **TEARDOWN_RULES_BY_CODE, **{r.code: r for r in ORDER_RULES}}
    return finish(args, run, gate, command="teardown", rules=rules)


def _can_ask(config: Config) -> bool:
    text = config.output_format in ("text", "concise")
    return text and sys.stdin.isatty() and sys.stderr.isatty()


def _typed_verb(plan: Any) -> bool:
    """Ask the person to type the platform's verb; True only for exactly that word."""
    sys.stderr.write(
        f"Stopping the meter means: {plan.action}. rentcheck will not run it.\n"
        f"Type {plan.verb!r} to approve it (anything else refuses): "
    )
    sys.stderr.flush()
    return bool(sys.stdin.readline().strip() == plan.verb)

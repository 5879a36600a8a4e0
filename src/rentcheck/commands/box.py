"""``rentcheck audit``, ``rentcheck trust`` and ``rentcheck push``: the box gates and helpers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rentcheck.config import Config, load_config
from rentcheck.errors import UsageError
from rentcheck.output import emit


def _connection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("connection")
    g.add_argument(
        "--ssh-config", metavar="FILE", help="ssh_config to resolve aliases with (ssh -F)"
    )
    g.add_argument(
        "--connect-timeout", type=float, metavar="S", help="TCP, banner and auth timeout (10)"
    )


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    audit = sub.add_parser(
        "audit",
        parents=[common],
        help="check a box before launch: disks, inodes, budget, memory, GPU, live scripts",
        description="Probe a box in one SSH round trip and judge it. Exit 0 clean, 1 findings, "
        "2 unreachable or unknown host key.",
    )
    where = audit.add_mutually_exclusive_group(required=True)
    where.add_argument("--host", help="an ssh alias (as in ssh_config), or local")
    where.add_argument(
        "--hosts",
        action="append",
        metavar="TAG",
        help="the inventory's hosts ([tool.rentcheck.hosts]): all, a tag or a name; audited "
        "at once, one merged table (repeatable)",
    )
    audit.add_argument(
        "--jobs",
        type=int,
        default=8,
        metavar="N",
        help="with --hosts: at most N hosts at a time (8; keeps a jump host's MaxSessions)",
    )
    audit.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="ROLE=PATH",
        help="a path to check, e.g. data=/root/autodl-tmp durable=/root/autodl-fs (repeatable)",
    )
    audit.add_argument(
        "--budget",
        metavar="SIZE|checkpoint=SIZE,keep=N,scratch=SIZE",
        help="disk each path must have free (overrides [tool.rentcheck.audit.budget])",
    )
    audit.add_argument("--profile", metavar="NAME", help="platform profile for the durable tier")
    audit.add_argument("--python", metavar="PATH", help="the project's interpreter on the box")
    gpu = audit.add_mutually_exclusive_group()
    gpu.add_argument(
        "--expect-gpu",
        dest="expect_gpu",
        action="store_true",
        default=None,
        help="require a usable GPU (default: yes over SSH, no for --host local)",
    )
    gpu.add_argument(
        "--no-expect-gpu", dest="expect_gpu", action="store_false", help="a CPU-only box"
    )
    audit.add_argument("--timeout", type=float, metavar="S", help="server-side probe limit (60)")
    for flag in ("select", "ignore"):
        audit.add_argument(
            f"--{flag}", metavar="CODES", help=f"comma-separated; overrides `{flag}`"
        )
    _connection_options(audit)
    audit.set_defaults(handler=run_audit)

    trust = sub.add_parser(
        "trust",
        parents=[common],
        help="accept a box's SSH host key into known_hosts, after showing its fingerprint",
    )
    trust.add_argument("host", help="the ssh alias")
    trust.add_argument(
        "--fingerprint", metavar="SHA256:...", help="accept only a key with this fingerprint"
    )
    trust.add_argument(
        "--yes",
        action="store_true",
        help="accept the key shown without asking (needed off a terminal without --fingerprint)",
    )
    _connection_options(trust)
    trust.set_defaults(handler=run_trust)

    push = sub.add_parser(
        "push",
        parents=[common],
        help="install a file on a box by temp file + rename (safe under a running script)",
    )
    push.add_argument("source", help="local file")
    push.add_argument("destination", help="HOST:PATH, or PATH with --host")
    push.add_argument("--host", help="the box (an ssh alias or local) when DST has no HOST:")
    _connection_options(push)
    push.set_defaults(handler=run_push)


def _config(args: argparse.Namespace, **overrides: Any) -> Config:
    overrides.update({"fail-level": args.fail_level, "output-format": args.output_format})
    return load_config(".", explicit=args.config, isolated=args.isolated, overrides=overrides)


def _settings(args: argparse.Namespace, config: Config) -> Any:
    from rentcheck.box.connect import show_ssh_debug
    from rentcheck.box.settings import audit_settings

    show_ssh_debug(bool(getattr(args, "debug", False)))
    return audit_settings(
        config,
        paths=getattr(args, "path", ()),
        budget=getattr(args, "budget", None),
        overrides=_given(args),
    )


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The audit settings the command line gives (None: not given)."""
    return {
        "profile": getattr(args, "profile", None),
        "python": getattr(args, "python", None),
        "expect_gpu": getattr(args, "expect_gpu", None),
        "timeout": getattr(args, "timeout", None),
        "ssh_config": args.ssh_config,
        "connect_timeout": args.connect_timeout,
    }


def run_audit(args: argparse.Namespace) -> int:
    from rentcheck.box.facts_table import facts_table
    from rentcheck.box.runner import run_audit as audit
    from rentcheck.box.transport import close_all
    from rentcheck.commands.finish import finish
    from rentcheck.config import with_section_values
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    config = _config(args)
    # --select/--ignore here choose among the audit gate's rules ([tool.rentcheck.audit]).
    given = {k: v.split(",") for k, v in (("select", args.select), ("ignore", args.ignore)) if v}
    config = with_section_values(config, "audit", given, "the command line")
    if args.hosts:
        from rentcheck.commands.fleet import run_fleet_audit

        return run_fleet_audit(args, config, _given(args))
    settings = _settings(args, config)
    rules = all_rules()
    try:
        result = audit(args.host, config, settings, rules)
    finally:
        close_all()
    gate = GateResult(
        "audit",
        result.findings,
        extras={
            "host": args.host,
            "transport": result.transport(),
            "facts": result.facts,
            "budget": budget_extra(settings.budget),
        },
        seen=result.seen,
        host=args.host,
        profile=settings.profile,
        headline=facts_table(result.facts, settings, args.host),
    )
    return finish(
        args, GateRun(config, "audit", host=args.host), gate, command="audit", rules=rules
    )


def budget_extra(budget: Any) -> dict[str, Any]:
    """The disk budget each path was judged against, for reports (0 bytes: none set)."""
    roles = None if budget.roles is None else list(budget.roles)
    return {"bytes": budget.total, "text": budget.describe(), "roles": roles}


def _confirm(prompt: str) -> bool:
    """Ask on the terminal; False for anything but yes."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def run_trust(args: argparse.Namespace) -> int:
    from rentcheck.box.connect import fetch_host_key
    from rentcheck.box.knownhosts import check_host_key, fingerprint, host_key_status, record_trust
    from rentcheck.box.sshconfig import resolve_host
    from rentcheck.errors import HostKeyError

    config = _config(args)
    settings = _settings(args, config)
    spec = resolve_host(args.host, settings.ssh_config)
    key = fetch_host_key(spec, settings.connect_timeout)
    shown = f"{key.get_name()} {fingerprint(key)}"
    sys.stderr.write(f"{args.host} ({spec.known_hosts_name}) offers {shown}\n")
    if args.fingerprint and args.fingerprint != fingerprint(key):
        raise HostKeyError(
            f"{args.host} offers {fingerprint(key)}, not the expected {args.fingerprint}; "
            "nothing was added",
            hint="check the fingerprint with your provider; the box may not be what you think",
        )
    status = host_key_status(spec, key)
    if status in ("changed", "revoked"):
        check_host_key(spec, key)  # raises the loud refusal: trust never replaces a key
    added = status == "unknown"
    if added and not (args.fingerprint or args.yes):
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise UsageError(
                f"not adding {shown} for {args.host} without a confirmation",
                hint="check the fingerprint with your provider, then pass --fingerprint "
                f"{fingerprint(key)} (or --yes)",
            )
        if not _confirm(f"add this key for {spec.known_hosts_name} to known_hosts? [y/N] "):
            raise UsageError(f"nothing was added for {args.host}", hint="answer y to add it")
    where = record_trust(spec, key) if added else "already trusted"
    doc = {"host": args.host, "key": shown, "known_hosts_name": spec.known_hosts_name}
    doc.update({"added": added, "known_hosts": where if added else None})
    if config.output_format == "json":
        emit(json.dumps(doc, indent=2) + "\n", args.output_file)
    else:
        text = f"added {shown} for {spec.known_hosts_name} to {where}" if added else where
        emit(f"{args.host}: {text}\n", args.output_file)
    return 0


def run_push(args: argparse.Namespace) -> int:
    from rentcheck.box.push import push_file
    from rentcheck.box.transport import close_all, open_box

    config = _config(args)
    settings = _settings(args, config)
    host, target = args.host, args.destination
    if host is None:
        host, sep, target = args.destination.partition(":")
        if not sep or not host or not target:
            raise UsageError(
                f"{args.destination!r} is not HOST:PATH", hint="or pass --host HOST (or local)"
            )
    try:
        box = open_box(
            host, ssh_config=settings.ssh_config, connect_timeout=settings.connect_timeout
        )
        result = push_file(box, args.source, target, timeout=settings.timeout)
    except FileNotFoundError as exc:
        raise UsageError(f"cannot read {args.source}: {exc.strerror}") from None
    finally:
        close_all()
    if config.output_format == "json":
        emit(json.dumps(vars(result), indent=2) + "\n", args.output_file)
    else:
        from rentcheck.sanitise import sanitise  # the box's paths and command lines

        emit(sanitise(result.describe()) + "\n", args.output_file)
    return 0

"""``rentcheck gate NAME`` and ``rentcheck status``; plus the commands of plugin gates.

``gate`` runs a gate, or every gate of a phase, exactly as its own command would (it goes
through the same parser and handler), with its prerequisites checked first. A gate that is
planned (no command of its own yet) checks only its prerequisites and records "ready".
``status`` reads the ledger for the current files and says, per phase, where the project
stands and which command comes next.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rentcheck.commands.finish import add_force_options, finish, force_reason
from rentcheck.config import Config, load_config
from rentcheck.errors import UsageError
from rentcheck.output import emit

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    from rentcheck.gates.table import all_gates, known_names

    gate = sub.add_parser(
        "gate",
        parents=[common],
        help="run one gate (or every gate of a phase) with its prerequisites checked first",
        description="Run a lifecycle gate as its own command would, after checking in the "
        "ledger that the gates it requires passed. Known: " + known_names() + ".",
        epilog="Arguments after NAME go to the gate's own command, e.g. "
        "`rentcheck gate audit --host box`. Exit 0 pass, 1 findings, 2 error.",
    )
    gate.add_argument("name", metavar="NAME", help="a gate or a phase")
    gate.add_argument("--host", help="the box, for gates judged per host (audit, launch)")
    add_force_options(gate)
    # `-- ARGS` after the options go to the gate's own command; split off before parsing
    # (see split_passthrough), since argparse gives a positional after NAME nothing.
    gate.set_defaults(rest=[])
    gate.set_defaults(handler=run_gate_command)

    status = sub.add_parser(
        "status",
        parents=[common],
        help="where the project stands: each phase's last verdict, what is stale, what next",
    )
    status.add_argument("--host", help="judge host gates (audit, launch) for this box")
    status.set_defaults(handler=run_status)

    taken = set(sub.choices)
    for row in all_gates():
        # A plugin gate without a command module of its own gets a generic command.
        for command in row.commands:
            if row.cli_module is None and row.runner is not None and command not in taken:
                plugin = sub.add_parser(command, parents=[common], help=row.summary)
                plugin.add_argument("--host", help="the box, when the gate is judged per host")
                add_force_options(plugin)
                plugin.set_defaults(handler=run_plugin_gate, gate_name=row.name)
                taken.add(command)


def split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """``rentcheck gate NAME [options] -- ARGS``: the arguments for rentcheck, and ARGS."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def _config(args: argparse.Namespace) -> Config:
    overrides = {"fail-level": args.fail_level, "output-format": args.output_format}
    return load_config(".", explicit=args.config, isolated=args.isolated, overrides=overrides)


def run_gate_command(args: argparse.Namespace) -> int:
    from rentcheck.gates.table import gates_for

    rows = gates_for(args.name)
    rest = list(args.rest)
    if rest and len(rows) > 1:
        raise UsageError(
            f"{args.name} is a phase of {len(rows)} gates; arguments go to one gate",
            hint="name the gate, e.g. `rentcheck gate smoke -- --steps 3`",
        )
    worst = 0
    for row in rows:
        code = _run_one(args, row, rest)
        worst = max(worst, code)
        if code and len(rows) > 1:
            break  # the later gates of the phase would fail on this one
    return worst


def _passthrough(args: argparse.Namespace) -> list[str]:
    flags: list[str] = []
    for name in ("config", "output_format", "output_file", "fail_level", "color"):
        value = getattr(args, name, None)
        if value is not None and not (name == "color" and value == "auto"):
            flags += [f"--{name.replace('_', '-')}", str(value)]
    flags += ["--isolated"] if args.isolated else []
    flags += ["--exit-zero"] if args.exit_zero else []
    return flags


def _run_one(args: argparse.Namespace, row: Any, rest: list[str]) -> int:
    if row.commands and row.cli_module is not None:
        from rentcheck.cli import build_parser

        argv = [row.commands[0], *_passthrough(args)]
        if args.host and "host" in row.evidence:
            argv += ["--host", args.host]
        if args.force and row.requires:
            argv += ["--force", "--reason", args.reason or ""]
        argv += rest
        parser = build_parser(argv)
        sub_args = parser.parse_args(argv)
        return int(sub_args.handler(sub_args))
    if row.runner is not None:
        args.gate_name = row.name
        return run_plugin_gate(args)
    return _prerequisites_only(args, row)


def _prerequisites_only(args: argparse.Namespace, row: Any) -> int:
    """A planned gate: check what it requires, record "ready" when all of it holds."""
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    config = _config(args)
    run = GateRun(config, row, host=args.host, force_reason=force_reason(args))
    run.precheck()
    note = f"only the prerequisites of {row.name} are checked so far (its own checks are planned)"
    result = GateResult(row.name, [], extras={row.name: {"checked": "prerequisites", "note": note}})
    result.headline = (f"{row.name}: {note}",)
    return finish(args, run, result, command=f"gate {row.name}", rules=all_rules())


def run_plugin_gate(args: argparse.Namespace) -> int:
    """A plugin gate's own command: its runner, then the one judgement and the ledger."""
    from rentcheck.gates.run import GateRun
    from rentcheck.gates.table import gate_named
    from rentcheck.registry import all_rules

    row = gate_named(args.gate_name)
    run = GateRun(_config(args), row, host=args.host, force_reason=force_reason(args))
    result = run.run_runner({"host": args.host})
    return finish(
        args, run, result, command=row.commands[0] if row.commands else row.name, rules=all_rules()
    )


def run_status(args: argparse.Namespace) -> int:
    import json

    from rentcheck.gates.status import project_status, render_status

    config = _config(args)
    status = project_status(config, host=args.host)
    for notice in config.notices:
        sys.stderr.write(f"rentcheck: warning: {notice}\n")
    if config.output_format == "json":
        emit(json.dumps(status, indent=2, ensure_ascii=False) + "\n", args.output_file)
    else:
        emit(render_status(status), args.output_file)
    return 0

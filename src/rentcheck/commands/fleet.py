"""``--hosts TAG|all`` for the box gates (audit, watch): one judgement and ledger line per host,
one report with the merged table (host x check, totals) first.

``report_fleet`` is the part every gate shares; each gate adds only the function that runs it
on one host (``rentcheck.box.fleet_run.HostGate``), e.g. ``audit_host`` or ``watch_host``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from rentcheck.box.fleet import Host
from rentcheck.box.fleet_run import HostResult
from rentcheck.config import Config
from rentcheck.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.model import Rule

__all__ = ["fleet_hosts", "report_fleet", "run_fleet_audit", "run_fleet_watch", "watch_host"]


def fleet_hosts(args: argparse.Namespace, config: Config) -> list[Host]:
    """The inventory hosts ``--hosts`` picks; ``--jobs`` checked."""
    from rentcheck.box.fleet import inventory, select_hosts

    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be at least 1", hint="e.g. --jobs 8")
    return select_hosts(inventory(config), args.hosts)


def report_fleet(
    args: argparse.Namespace,
    config: Config,
    gate: str,
    outcomes: Sequence[HostResult],
    rules: Mapping[str, Rule],
    *,
    command: str,
    force_reason: str | None = None,
) -> int:
    """Judge each host's result (and append its ledger line), then print one report with the
    merged table. Exit 0 all pass, 1 a host has failing findings, 2 a host could not be
    checked (the others are still shown), or the gate's own worse code (watch: 3 dead)."""
    from rentcheck.box.fleet_run import host_row
    from rentcheck.box.fleet_table import fleet_table
    from rentcheck.commands.finish import show
    from rentcheck.gates.judge import GateResult, Verdict
    from rentcheck.gates.run import GateRun

    shown: list[Any] = []
    failing: list[Any] = []
    rows = []
    exit_code = 0
    per_host: list[dict[str, Any]] = []
    for outcome in outcomes:
        name = outcome.host.name
        if outcome.error is not None or outcome.result is None:
            rows.append(host_row(outcome, 2, []))
            per_host.append({"host": name, "exit_code": 2, "error": str(outcome.error)})
            exit_code = max(exit_code, 2)
            continue
        run = GateRun(outcome.config, gate, host=name, force_reason=force_reason)
        run.precheck()  # a missing prerequisite is a finding of this host's row
        verdict = run.conclude(outcome.result, exit_zero=args.exit_zero, rules=rules)
        code = verdict.exit_code
        if code and outcome.exit_code is not None:
            code = outcome.exit_code  # the judgement decides; the gate says how bad it is
        shown.extend(verdict.findings)
        failing.extend(verdict.failing)
        rows.append(host_row(outcome, code, verdict.findings))
        per_host.append({"host": name, "exit_code": code, **outcome.extras})
        exit_code = max(exit_code, code)
    if args.exit_zero:
        exit_code = 0
    merged = Verdict(tuple(shown), tuple(failing), config.fail_level, exit_code)
    lines = [*fleet_table(rows), *_status_lines(outcomes)]
    table = GateResult(gate, list(shown), extras={"hosts": per_host}, headline=tuple(lines))
    return show(args, GateRun(config, gate), table, merged, command=command, rules=rules)


def _status_lines(outcomes: Sequence[HostResult]) -> list[str]:
    """Each host's own headline (watch: its status line), after the table."""
    lines: list[str] = []
    for outcome in outcomes:
        if outcome.result is not None and outcome.result.headline:
            lines.extend(f"{outcome.host.name}: {line}" for line in outcome.result.headline)
    return ["", *lines] if lines else []


def run_fleet_audit(args: argparse.Namespace, config: Config, given: dict[str, Any]) -> int:
    """``rentcheck audit --hosts``: every selected host audited at once."""
    from rentcheck.box.fleet_run import audit_fleet
    from rentcheck.registry import all_rules

    hosts = fleet_hosts(args, config)
    rules = all_rules()
    outcomes = audit_fleet(
        config, hosts, rules, overrides=given, paths=args.path, budget=args.budget, jobs=args.jobs
    )
    return report_fleet(args, config, "audit", outcomes, rules, command="audit")


def watch_host(
    config: Config, host: Host, given: dict[str, Any], connection: Mapping[str, Any]
) -> HostResult:
    """The watch gate on one host of the inventory: its state file and findings are the
    host's by its inventory name; the connection goes to its alias."""
    from rentcheck.box.fleet import host_config, host_settings
    from rentcheck.box.fleet_run import named_for
    from rentcheck.box.transport import open_box
    from rentcheck.box.watch_gate import watch_result, with_ledger_session

    # reached as its audit reaches it: the host's ssh_config unless the command line gives one
    given_connection = {k: v for k, v in connection.items() if v is not None}
    _, reach = host_settings(config, host, given_connection)
    config = host_config(config, host)  # judged with the host's own select/ignore
    # each host's own last launch, when neither the command line nor the config names one
    given, _ = with_ledger_session(config, host.name, given)
    box = open_box(host.alias, ssh_config=reach.ssh_config, connect_timeout=reach.connect_timeout)
    watched = watch_result(config, host.name, given, box)
    watched.result.findings = named_for(host, watched.result.findings)
    extras = {"watch": watched.outcome.event}
    return HostResult(host, config, watched.result, exit_code=watched.outcome.exit_code,
                      extras=extras)  # fmt: skip


def run_fleet_watch(
    args: argparse.Namespace, config: Config, given: dict[str, Any]
) -> tuple[int, list[HostResult]]:
    """``rentcheck watch --hosts``: one watch of every selected host at once; the exit code
    and each host's result (for --jsonl and --on-change)."""
    from rentcheck.box.fleet_run import run_fleet
    from rentcheck.commands.finish import force_reason
    from rentcheck.registry import all_rules

    hosts = fleet_hosts(args, config)
    connection = {"ssh_config": args.ssh_config, "connect_timeout": args.connect_timeout}
    outcomes = run_fleet(
        config, hosts, lambda c, h: watch_host(c, h, given, connection), jobs=args.jobs
    )
    code = report_fleet(
        args, config, "watch", outcomes, all_rules(), command="watch",
        force_reason=force_reason(args),
    )  # fmt: skip
    return code, outcomes

"""``rentcheck audit --hosts TAG|all``: the fleet audit's judgement and its one merged report."""

from __future__ import annotations

import argparse
from typing import Any

from rentcheck.config import Config
from rentcheck.errors import UsageError

__all__ = ["run_fleet_audit"]


def run_fleet_audit(args: argparse.Namespace, config: Config, given: dict[str, Any]) -> int:
    """Audit every selected host at once; one ledger line per checked host; one report with
    the merged table first. Exit 0 all pass, 1 a host has failing findings, 2 a host could not
    be checked (the others are still audited and shown)."""
    from rentcheck.box.fleet import inventory, select_hosts
    from rentcheck.box.fleet_run import audit_fleet, host_row
    from rentcheck.box.fleet_table import fleet_table
    from rentcheck.commands.finish import show
    from rentcheck.gates.judge import GateResult, Verdict
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: must be at least 1", hint="e.g. --jobs 8")
    hosts = select_hosts(inventory(config), args.hosts)
    rules = all_rules()
    audits = audit_fleet(
        config, hosts, rules, overrides=given, paths=args.path, budget=args.budget, jobs=args.jobs
    )
    shown: list[Any] = []
    failing: list[Any] = []
    rows = []
    exit_code = 0
    per_host: list[dict[str, Any]] = []
    for audit in audits:
        if audit.error is not None:
            rows.append(host_row(audit, 2, []))
            per_host.append({"host": audit.host.name, "exit_code": 2, "error": str(audit.error)})
            exit_code = 2
            continue
        result = GateResult(
            "audit", audit.findings, extras=audit.extras, host=audit.host.name,
            profile=audit.profile,
        )  # fmt: skip
        verdict = GateRun(audit.config, "audit", host=audit.host.name).conclude(
            result, exit_zero=args.exit_zero, rules=rules
        )
        shown.extend(verdict.findings)
        failing.extend(verdict.failing)
        rows.append(host_row(audit, verdict.exit_code, verdict.findings))
        per_host.append({"host": audit.host.name, "exit_code": verdict.exit_code, **audit.extras})
        exit_code = max(exit_code, verdict.exit_code)
    if args.exit_zero:
        exit_code = 0
    fail_level = config.fail_level
    merged = Verdict(tuple(shown), tuple(failing), fail_level, exit_code)
    table = GateResult(
        "audit", list(shown), extras={"hosts": per_host}, headline=tuple(fleet_table(rows))
    )
    run = GateRun(config, "audit")
    return show(args, run, table, merged, command="audit", rules=rules)

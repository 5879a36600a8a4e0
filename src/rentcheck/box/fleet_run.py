"""A box gate on every selected host at once, in a bounded pool (``--hosts TAG|all``).

``run_fleet`` is generic over the gate: it takes the function that runs the gate on one host
(connect, probe, return a ``GateResult``) and gives one ``HostResult`` per host, in inventory
order. The pool's size (``--jobs``, default 8) bounds the SSH connections open at one time, so a
jump host's ``MaxSessions`` and ``MaxStartups`` hold. A host that cannot be reached is a result
with its reason; the others complete. Judging and the ledger happen afterwards, in the calling
thread (``rentcheck.commands.fleet``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.box.fleet import Host, host_settings
from rentcheck.box.fleet_table import HostRow
from rentcheck.config import Config
from rentcheck.errors import RentcheckError
from rentcheck.gates.judge import GateResult
from rentcheck.model import Finding, Rule

__all__ = ["DEFAULT_JOBS", "HostResult", "audit_fleet", "audit_host", "host_row", "run_fleet"]

DEFAULT_JOBS = 8


@dataclass
class HostResult:
    """One host's run of a gate: its result, or the error that stopped it."""

    host: Host
    config: Config  # the project config as judged for this host (its audit keys laid over)
    result: GateResult | None = None
    error: RentcheckError | None = None
    # The gate's own exit code when it has findings (watch: 3 for a dead job); None: judge's.
    exit_code: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # this host's part of the report


# Runs one gate on one host (in a pool thread); raises RentcheckError when it cannot.
HostGate = Callable[[Config, Host], HostResult]


def run_fleet(
    config: Config, hosts: Sequence[Host], one: HostGate, *, jobs: int = DEFAULT_JOBS
) -> list[HostResult]:
    """``one`` on each host, in inventory order, at most ``jobs`` boxes at a time; every
    pooled connection is closed at the end. Hosts reached at one alias (two runs on one box)
    share its pooled connection, which a pull closes when it is done: they run one after
    another, in one task."""
    from concurrent.futures import ThreadPoolExecutor

    from rentcheck.box.transport import close_all

    def guarded(host: Host) -> HostResult:
        try:
            return one(config, host)
        except RentcheckError as exc:
            return HostResult(host, config, error=exc)

    boxes: dict[str, list[Host]] = {}
    for host in hosts:
        boxes.setdefault(host.alias, []).append(host)
    done: dict[str, HostResult] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(boxes)))) as pool:
            for results in pool.map(lambda box: [guarded(h) for h in box], boxes.values()):
                done.update((result.host.name, result) for result in results)
    finally:
        close_all()
    return [done[host.name] for host in hosts]


def named_for(host: Host, findings: Sequence[Finding]) -> list[Finding]:
    """Findings name the inventory host, not the alias it was reached by."""
    from rentcheck.record import replace

    return [f if f.host == host.name else replace(f, host=host.name) for f in findings]


def audit_host(
    config: Config, host: Host, options: Mapping[str, Any], rules: Mapping[str, Rule]
) -> HostResult:
    """The audit gate on one host of the inventory, with that host's own audit settings."""
    from rentcheck.box.runner import run_audit

    merged, settings = host_settings(
        config, host, options["overrides"], paths=options["paths"], budget=options["budget"]
    )
    try:
        audit = run_audit(host.alias, merged, settings, rules)
    except RentcheckError as exc:  # judged with this host's config, like its findings
        return HostResult(host, merged, error=exc)
    extras = {"transport": audit.transport(), "facts": audit.facts}
    result = GateResult(
        "audit",
        named_for(host, audit.findings),
        extras=extras,
        host=host.name,
        profile=settings.profile,
        seen=audit.seen,
    )
    return HostResult(host, merged, result, extras=extras)


def audit_fleet(
    config: Config,
    hosts: Sequence[Host],
    rules: Mapping[str, Rule],
    *,
    overrides: Mapping[str, Any] | None = None,
    paths: Sequence[str] = (),
    budget: str | None = None,
    jobs: int = DEFAULT_JOBS,
) -> list[HostResult]:
    """Each host's audit; ``overrides``, ``paths`` and ``budget`` (the command line's) apply
    to every host."""
    options = {"overrides": dict(overrides or {}), "paths": tuple(paths), "budget": budget}
    return run_fleet(
        config, hosts, lambda c, h: audit_host(c, h, options, rules), jobs=jobs
    )  # fmt: skip


def host_row(outcome: HostResult, exit_code: int, shown: Sequence[Finding]) -> HostRow:
    """The host's row of the merged table: its judged findings counted by code."""
    counts: dict[str, int] = {}
    for finding in shown:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    reason = str(outcome.error).splitlines()[0] if outcome.error is not None else ""
    return HostRow(outcome.host.name, 2 if outcome.error else exit_code, counts, reason)

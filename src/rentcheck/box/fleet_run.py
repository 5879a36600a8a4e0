"""``rentcheck audit --hosts TAG|all``: every selected host audited at once in a bounded pool.

The pool's size (``--jobs``, default 8) bounds the SSH connections open at one time, so a jump
host's ``MaxSessions`` and ``MaxStartups`` hold. A host that cannot be reached is a row with its
reason; the others complete. Judging and the ledger happen afterwards, in this thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.box.fleet import Host, host_settings
from rentcheck.box.fleet_table import HostRow
from rentcheck.config import Config
from rentcheck.errors import RentcheckError
from rentcheck.model import Finding, Rule

__all__ = ["DEFAULT_JOBS", "HostAudit", "audit_fleet", "host_row"]

DEFAULT_JOBS = 8


@dataclass
class HostAudit:
    host: Host
    config: Config  # the project config with this host's audit keys
    findings: list[Finding]
    extras: dict[str, Any]
    profile: str | None
    error: RentcheckError | None = None


def _audit_one(
    config: Config, host: Host, options: Mapping[str, Any], rules: Mapping[str, Rule]
) -> HostAudit:
    from rentcheck.box.runner import run_audit

    merged = config
    try:
        merged, settings = host_settings(
            config, host, options["overrides"], paths=options["paths"], budget=options["budget"]
        )
        result = run_audit(host.alias, merged, settings, rules)
    except RentcheckError as exc:
        return HostAudit(host, merged, [], {}, None, error=exc)
    # Findings name the inventory host, not the alias they were reached by.
    findings = [f if f.host == host.name else _with_host(f, host.name) for f in result.findings]
    extras = {"transport": result.transport(), "facts": result.facts}
    return HostAudit(host, merged, findings, extras, settings.profile)


def _with_host(finding: Finding, host: str) -> Finding:
    from rentcheck.record import replace

    return replace(finding, host=host)


def audit_fleet(
    config: Config,
    hosts: Sequence[Host],
    rules: Mapping[str, Rule],
    *,
    overrides: Mapping[str, Any] | None = None,
    paths: Sequence[str] = (),
    budget: str | None = None,
    jobs: int = DEFAULT_JOBS,
) -> list[HostAudit]:
    """Each host's audit, in inventory order, at most ``jobs`` at a time; ``overrides``,
    ``paths`` and ``budget`` (the command line's) apply to every host."""
    options = {"overrides": dict(overrides or {}), "paths": tuple(paths), "budget": budget}
    from concurrent.futures import ThreadPoolExecutor

    from rentcheck.box.transport import close_all

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(hosts)))) as pool:
            futures = [pool.submit(_audit_one, config, h, options, rules) for h in hosts]
            return [f.result() for f in futures]
    finally:
        close_all()


def host_row(audit: HostAudit, exit_code: int, shown: Sequence[Finding]) -> HostRow:
    """The host's row of the merged table: its judged findings counted by code."""
    counts: dict[str, int] = {}
    for finding in shown:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    reason = str(audit.error).splitlines()[0] if audit.error is not None else ""
    return HostRow(audit.host.name, 2 if audit.error else exit_code, counts, reason)

"""pytest adapter for the audit gate: ``--rentcheck-audit HOST`` items and ``rentcheck_box``.

``pytest --rentcheck-audit gpu-box`` adds one item per host that runs the same audit as
``rentcheck audit --host gpu-box`` (settings from the project's rentcheck config) and fails
with the finding lines. ``--rentcheck-hosts all`` (or a tag) adds one item per host of the
``[tool.rentcheck.hosts]`` inventory, each with that host's own settings; ``-k NAME`` picks one
(with only later gates asked for, ``--rentcheck-gate pull`` ..., it audits nothing). The other
box gates get one item per host of the same inventory (launch, watch:
``rentcheck.gates.pytest_items.add_table_items``; pull, teardown:
``rentcheck.pull.pytest_pull``). Every item of one host, whatever its gate,
carries the host's ``xdist_group`` mark, so that ``--dist loadgroup`` keeps them on one worker,
which then uses one connection. Tests marked
``rentcheck_gate("audit")`` run only when the audit gate was asked for, and get the box as the
``rentcheck_box`` fixture. Nothing heavy is imported until a gate item or the fixture runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from rentcheck.gates.pytest_items import GateItem

if TYPE_CHECKING:
    from rentcheck.box.fleet import Host
    from rentcheck.box.transport import Box
    from rentcheck.config import Config

__all__ = ["AuditItem"]

GATE = "audit"


# Gates that also run per inventory host: asked for alone, --rentcheck-hosts audits nothing.
def _later_host_gates() -> frozenset[str]:
    """The gates of the phases after the audit (launch ... teardown), from the gate table."""
    from rentcheck.gates.table import PHASES, all_gates

    after = PHASES.index("audit")
    return frozenset(g.name for g in all_gates() if g.phase in PHASES and g.phase_index > after)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rentcheck")
    group.addoption(
        "--rentcheck-audit",
        action="append",
        default=[],
        metavar="HOST",
        help="run the audit gate on HOST (an ssh alias, or local); repeatable",
    )
    group.addoption(
        "--rentcheck-hosts",
        action="append",
        default=[],
        metavar="TAG",
        help="run the box gates asked for (the audit when none of launch, watch, pull, "
        "verify, teardown is) on the inventory's hosts ([tool.rentcheck.hosts]): all, a tag "
        "or a host name; one item per gate and host; repeatable",
    )
    group.addoption(
        "--rentcheck-ssh-config",
        metavar="FILE",
        help="ssh_config for the audit gate's aliases (as ssh -F)",
    )


def _settings(config: pytest.Config) -> tuple[Config, Any]:
    from rentcheck.box.settings import audit_settings
    from rentcheck.gates.pytest_items import load_project_config

    rc_config = load_project_config(config)
    ssh_config = config.getoption("rentcheck_ssh_config")
    overrides = {"ssh_config": ssh_config} if ssh_config else {}
    return rc_config, audit_settings(rc_config, overrides=overrides)


# tryfirst: before xdist's worker hook, which adds each item's xdist_group to its node id
# (an item made after it would be scheduled alone, away from its host's other items).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import requested_gates

    hosts: list[str] = config.getoption("rentcheck_audit")
    fleet = inventory_hosts(config)
    requested = requested_gates(config)
    if GATE in requested and not hosts and not fleet:
        raise pytest.UsageError(
            "the audit gate needs a box: --rentcheck-audit HOST (an ssh alias, or local), "
            "or --rentcheck-hosts all|TAG (the [tool.rentcheck.hosts] inventory)"
        )
    if GATE not in requested and requested & _later_host_gates():
        fleet = []  # --rentcheck-hosts with another gate asked for (pull ...): not the audit
    for host in dict.fromkeys(hosts):
        audit = AuditItem.from_parent(session, name=f"rentcheck-audit[{host}]")
        audit.setup_gate(GATE, host)
        items.append(audit)
    for entry in fleet:
        if entry.name in hosts:
            continue  # asked for twice: one item
        audit = AuditItem.from_parent(session, name=f"rentcheck-audit[{entry.name}]")
        audit.setup_gate(GATE, entry.name)
        audit.inventory_host = entry
        items.append(audit)
    if fleet or hosts:
        from rentcheck.gates.pytest_items import order_by_phase

        order_by_phase(items)  # with the other gates' items of each host (they sort too)


def inventory_hosts(config: pytest.Config) -> list[Host]:
    """The inventory hosts ``--rentcheck-hosts`` picks (none without the option)."""
    wanted: list[str] = config.getoption("rentcheck_hosts")
    if not wanted:
        return []
    from rentcheck.box.fleet import inventory, select_hosts
    from rentcheck.errors import RentcheckError
    from rentcheck.gates.pytest_items import load_project_config

    try:
        return select_hosts(inventory(load_project_config(config)), wanted)
    except RentcheckError as exc:
        raise pytest.UsageError(f"--rentcheck-hosts: {exc}") from None


@pytest.fixture(scope="session")
def rentcheck_box(pytestconfig: pytest.Config) -> Iterator[Box]:
    """The box of the audit gate (the first ``--rentcheck-audit`` host; ``local`` if none)."""
    from rentcheck.box.transport import close_all, open_box
    from rentcheck.errors import RentcheckError

    hosts = pytestconfig.getoption("rentcheck_audit")
    host = hosts[0] if hosts else "local"
    try:
        _, settings = _settings(pytestconfig)
        box = open_box(
            host, ssh_config=settings.ssh_config, connect_timeout=settings.connect_timeout
        )
    except RentcheckError as exc:
        pytest.fail(f"rentcheck_box: {host}: {exc}", pytrace=False)
    yield box
    close_all()


def pytest_sessionfinish(session: pytest.Session) -> None:
    import sys

    transport = sys.modules.get("rentcheck.box.transport")
    if transport is not None:  # only if a gate item or the fixture connected somewhere
        transport.close_all()


class AuditItem(GateItem):
    def runtest(self) -> None:
        from rentcheck.box.fleet import Host
        from rentcheck.box.fleet_run import audit_host
        from rentcheck.gates.pytest_items import load_project_config
        from rentcheck.registry import all_rules

        assert self.host is not None  # noqa: S101 - setup_gate gave it one
        # The same audit of one host as `rentcheck audit --hosts`: the inventory host's own
        # settings, or a bare alias (--rentcheck-audit HOST) with the project's.
        host = self.inventory_host or Host(self.host, self.host, (), {})
        ssh_config = self.config.getoption("rentcheck_ssh_config")
        options = {"overrides": {"ssh_config": ssh_config} if ssh_config else {}, "paths": (),
                   "budget": None}  # fmt: skip
        outcome = audit_host(load_project_config(self.config), host, options, all_rules())
        if outcome.error is not None:
            raise outcome.error
        assert outcome.result is not None  # noqa: S101 - no error: a result
        self.raise_if_failing(outcome.config, outcome.result)

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name

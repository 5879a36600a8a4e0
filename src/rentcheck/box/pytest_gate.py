"""pytest adapter for the audit gate: ``--rentcheck-audit HOST`` items and ``rentcheck_box``.

``pytest --rentcheck-audit gpu-box`` adds one item per host that runs the same audit as
``rentcheck audit --host gpu-box`` (settings from the project's rentcheck config) and fails
with the finding lines. Items of one host carry an ``xdist_group`` mark so that
``--dist loadgroup`` keeps them on one worker, which then uses one connection. Tests marked
``rentcheck_gate("audit")`` run only when the audit gate was asked for, and get the box as the
``rentcheck_box`` fixture. Nothing heavy is imported until a gate item or the fixture runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from rentcheck.box.transport import Box
    from rentcheck.config import Config

__all__ = ["AuditGateError", "AuditItem"]

GATE = "audit"


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
        "--rentcheck-ssh-config",
        metavar="FILE",
        help="ssh_config for the audit gate's aliases (as ssh -F)",
    )


def _settings(config: pytest.Config) -> tuple[Config, Any]:
    from rentcheck.box.settings import audit_settings
    from rentcheck.config import load_config

    rc_config = load_config(
        str(config.rootpath), explicit=config.getoption("rentcheck_config", None)
    )
    ssh_config = config.getoption("rentcheck_ssh_config")
    overrides = {"ssh_config": ssh_config} if ssh_config else {}
    return rc_config, audit_settings(rc_config, overrides=overrides)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    hosts: list[str] = config.getoption("rentcheck_audit")
    for item in items:
        marker = item.get_closest_marker("rentcheck_gate")
        if marker and marker.args and marker.args[0] == GATE and not hosts:
            item.add_marker(pytest.mark.skip(reason="the audit gate was not asked for"))
    for host in dict.fromkeys(hosts):
        audit = AuditItem.from_parent(session, name=f"rentcheck-audit[{host}]")
        audit.host = host
        items.append(audit)


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


class AuditGateError(Exception):
    """The finding lines of a failed audit item (shown without a traceback)."""


class AuditItem(pytest.Item):
    host: str

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("rentcheck")
        if self.config.pluginmanager.hasplugin("xdist"):
            self.add_marker(pytest.mark.xdist_group(name=f"rentcheck-{self.name}"))

    def runtest(self) -> None:
        from rentcheck.box.runner import run_audit
        from rentcheck.errors import RentcheckError
        from rentcheck.registry import all_rules
        from rentcheck.sanitise import sanitise  # box text reaches the pytest report

        rc_config, settings = _settings(self.config)
        try:
            result = run_audit(self.host, rc_config, settings, all_rules())
        except RentcheckError as exc:
            raise AuditGateError(f"{self.host}: {sanitise(str(exc))}") from exc
        failing = [f for f in result.findings if f.severity >= rc_config.fail_level]
        if failing:
            lines = (f"{self.host}: {f.code} {sanitise(f.message)}" for f in failing)
            raise AuditGateError("\n".join(lines))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if excinfo.errisinstance(AuditGateError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name

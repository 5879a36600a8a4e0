"""The one pytest item base of every gate, its one failure type, and the gate hooks.

``GateItem`` carries the ``rentcheck`` and ``rentcheck_gate(NAME)`` markers, shows a failure
as finding lines without a traceback, and judges a ``GateResult`` with the same ``judge`` as
the CLI. ``pytest --rentcheck-gate NAME`` (a gate or a phase) asks for gates; a test marked
``@pytest.mark.rentcheck_gate("NAME")`` runs only when its gate was asked for, and its
outcome is part of that gate's verdict. After the run the controller (never an xdist
worker) appends one ledger line per gate (and host). Importing this module stays cheap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr
    from _pytest.terminal import TerminalReporter

    from rentcheck.box.fleet import Host
    from rentcheck.box.settings import AuditSettings
    from rentcheck.config import Config
    from rentcheck.gates.judge import GateResult

__all__ = [
    "GateFailure",
    "GateItem",
    "GateRecorder",
    "TableGateItem",
    "host_group",
    "order_by_phase",
    "requested_gates",
]

GATE_PROPERTY = "rentcheck_gate"
HOST_PROPERTY = "rentcheck_host"
FAILING_PROPERTY = "rentcheck_failing"
# A further gate whose verdict the item is part of (a host's pull item also verifies).
ALSO_PROPERTY = "rentcheck_also_gate"
# The manifest digest the item's pull, verify or teardown was about (the ledger's evidence).
MANIFEST_PROPERTY = "rentcheck_manifest"
# The GateResult's evidence and pass_evidence (JSON text: a report crosses from an xdist
# worker to the controller), recorded by the controller as the CLI records them.
EVIDENCE_PROPERTY = "rentcheck_evidence"
_REQUESTED = pytest.StashKey[frozenset[str]]()


class GateFailure(Exception):
    """A gate's verdict and failing finding lines, shown without a traceback."""


def load_project_config(config: pytest.Config) -> Config:
    from rentcheck.config import load_config

    return load_config(str(config.rootpath), explicit=config.getoption("rentcheck_config", None))


class GateItem(pytest.Item):
    """An item of one gate (``gate``), for one host where the gate is judged per host."""

    gate: str = "lint"
    host: str | None = None
    # Set for a host of the inventory (--rentcheck-hosts): its alias, settings and selection.
    inventory_host: Host | None = None

    def setup_gate(self, gate: str, host: str | None = None) -> None:
        """Attach the item to ``gate`` (call right after ``from_parent``)."""
        self.gate = gate
        self.host = host
        self.add_marker("rentcheck")
        self.add_marker(pytest.mark.rentcheck_gate(gate))
        self.user_properties.append((GATE_PROPERTY, gate))
        if host is not None:
            self.user_properties.append((HOST_PROPERTY, host))
            if self.config.pluginmanager.hasplugin("xdist"):
                # Every gate's item of this host on one worker (--dist loadgroup): one
                # connection per host, the items in order on it.
                self.add_marker(pytest.mark.xdist_group(name=host_group(host)))
                _pin_group(self, host_group(host))

    def reached(self) -> tuple[Host, Config, AuditSettings]:
        """The box this item runs on (its inventory entry, or ``host`` as a bare alias), the
        config it is judged with (the host's own keys and select/ignore) and the audit
        settings it is reached with (``--rentcheck-ssh-config`` over the host's)."""
        from rentcheck.box.fleet import Host, host_settings

        assert self.host is not None  # noqa: S101 - only items of a host ask
        host = self.inventory_host or Host(self.host, self.host, (), {})
        given = self.config.getoption("rentcheck_ssh_config", None)
        overrides = {"ssh_config": given} if given else None
        config, settings = host_settings(load_project_config(self.config), host, overrides)
        return host, config, settings

    def judged_config(self) -> Config:
        """The project config, with an inventory host's own keys and select/ignore."""
        config = load_project_config(self.config)
        if self.inventory_host is None:
            return config
        from rentcheck.box.fleet import host_config

        return host_config(config, self.inventory_host)

    def raise_if_failing(self, config: Config, result: GateResult) -> None:
        """Judge ``result`` as the CLI does; fail with its headline and finding lines."""
        from rentcheck.gates.judge import failing_lines, headline_of, judge
        from rentcheck.gates.table import gate_named

        if result.evidence or result.pass_evidence:
            given = {"evidence": result.evidence, "pass_evidence": result.pass_evidence}
            self.user_properties.append((EVIDENCE_PROPERTY, json.dumps(given, sort_keys=True)))
        row = gate_named(self.gate)
        verdict = judge(config, result, section=row.section, proves=row.proves)
        if verdict.failing:
            codes = ",".join(sorted({f.code for f in verdict.failing}))
            self.user_properties.append((FAILING_PROPERTY, codes))
            headline = headline_of(result, verdict)
            lines = [*headline, *([""] if headline else [])]
            lines += failing_lines(verdict.failing)
            raise GateFailure("\n".join(lines))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if excinfo.errisinstance(GateFailure):
            return str(excinfo.value)
        from rentcheck.errors import RentcheckError

        if excinfo.errisinstance(RentcheckError):
            from rentcheck.sanitise import sanitise  # a box's words may be in the error

            return f"{self.name}: {sanitise(str(excinfo.value))}"
        # An unexpected error inside rentcheck itself: keep pytest's full report for it.
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path | str, None, str]:
        return self.path, None, self.name


class TableGateItem(GateItem):
    """A gate with no pytest module of its own (launch, watch, a planned or a plugin gate):
    its prerequisites, then its runner when it has one, judged like every gate. For a host of
    the inventory the runner connects to its alias; the item, its findings and the ledger
    name the host by its inventory name."""

    def runtest(self) -> None:
        from rentcheck.gates.run import GateRun

        config = self.judged_config()
        run = GateRun(config, self.gate, host=self.host, via="pytest")
        entry = self.inventory_host
        alias = entry.alias if entry is not None else None
        options = {
            "host": alias or self.host,
            "name": self.host,
            "ssh_config": self.config.getoption("rentcheck_ssh_config", None),
        }
        result = run.run_runner(options)
        if self.host is not None and alias not in (None, self.host):
            from rentcheck.record import replace

            result.host = self.host
            result.findings = [
                f if f.host in (None, self.host) else replace(f, host=self.host)
                for f in result.findings
            ]
        self.raise_if_failing(config, run.with_order(result))


def _pin_group(item: pytest.Item, group: str) -> None:
    """Put ``@group`` on the item's node id ourselves, on an xdist worker under
    ``--dist loadgroup``. pytest 9.2 builds node ids from a structured id, and xdist 3.8
    still edits the old ``_nodeid`` field, so the group never reached the scheduler and a
    host's items were spread over workers (pytest-dev/pytest-xdist#1386). A second suffix
    from a fixed xdist is harmless: the scheduler reads the last one."""
    if not getattr(item.config.option, "loadgroup", False) or item.nodeid.endswith("@" + group):
        return  # not a loadgroup worker, or the suffix is there
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # a pytest whose node ids xdist still edits: it adds the suffix
        return
    item._id = coerce_node_id(f"{item.nodeid}@{group}")


def host_group(host: str) -> str:
    """The xdist group of every item of ``host``."""
    return f"rentcheck-host-{host}"


def requested_gates(config: pytest.Config) -> frozenset[str]:
    """The gates this pytest run asked for (``--rentcheck-gate`` and the per-gate options)."""
    found = config.stash.get(_REQUESTED, None)
    if found is not None:
        return found
    from rentcheck.errors import UsageError
    from rentcheck.gates.table import gates_for

    names: set[str] = set()
    for given in config.getoption("rentcheck_gate", None) or []:
        try:
            names.update(g.name for g in gates_for(given))
        except UsageError as exc:
            raise pytest.UsageError(f"--rentcheck-gate {given}: {exc}") from None
    from rentcheck.gates.table import all_gates

    for row in all_gates():  # the per-gate flags (--rentcheck-smoke ...) ask for their gate
        if row.pytest_flag and config.getoption(row.pytest_flag, None):
            names.add(row.name)
    found = frozenset(names)
    config.stash[_REQUESTED] = found
    return found


def addoption(parser: pytest.Parser) -> None:
    from rentcheck.gates.table import known_names

    group = parser.getgroup("rentcheck")
    group.addoption(
        "--rentcheck-gate",
        action="append",
        default=[],
        metavar="NAME",
        help="run this gate, or every gate of this phase, as items (" + known_names() + "); "
        "tests marked rentcheck_gate(NAME) join it; repeatable",
    )


def join_marked_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marked tests join their gate, or are skipped; an unknown gate name is an error."""
    from rentcheck.gates.table import all_gates, known_names

    names = {g.name for g in all_gates()}
    requested = requested_gates(config)
    for item in items:
        marker = item.get_closest_marker("rentcheck_gate")
        if marker is None or isinstance(item, GateItem):
            continue
        gate = marker.args[0] if marker.args else marker.kwargs.get("name")
        if gate not in names and not requested:
            # rentcheck was not asked for: a plain `pytest` is no place for its usage errors
            reason = f"rentcheck_gate({gate!r}) names no gate (known: {known_names()})"
            item.add_marker(pytest.mark.skip(reason=reason))
            continue
        if gate not in names:
            raise pytest.UsageError(
                f"{item.nodeid}: rentcheck_gate({gate!r}) names no gate; known: {known_names()}"
            )
        if gate in requested:
            item.user_properties.append((GATE_PROPERTY, gate))
        else:
            reason = f"the {gate} gate was not asked for (--rentcheck-gate {gate})"
            item.add_marker(pytest.mark.skip(reason=reason))


def add_table_items(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Items for requested gates that no gate module serves (planned and plugin gates);
    then, with hosts, every gate item in lifecycle order."""
    from rentcheck.gates.table import all_gates

    requested = requested_gates(session.config)
    # name -> its inventory entry: --rentcheck-audit HOST has none (it is its own alias); an
    # inventory host (--rentcheck-hosts all|TAG) is its name, reached by its alias.
    hosts: dict[str, Host | None] = dict.fromkeys(
        session.config.getoption("rentcheck_audit", None) or []
    )
    if session.config.getoption("rentcheck_hosts", None):
        from rentcheck.box.pytest_gate import inventory_hosts

        for entry in inventory_hosts(session.config):
            hosts.setdefault(entry.name, entry)
    for row in all_gates():
        if row.name not in requested or row.pytest_module is not None:
            continue
        if row.runner is None and not row.planned:
            raise pytest.UsageError(
                f"--rentcheck-gate {row.name}: this gate runs from the CLI only "
                f"(`rentcheck {row.commands[0] if row.commands else 'gate ' + row.name}`)"
            )
        per_host: list[str | None] = [*hosts] if hosts and "host" in row.evidence else [None]
        for host in per_host:
            name = f"rentcheck-{row.name}" + (f"[{host}]" if host else "")
            item = TableGateItem.from_parent(session, name=name)
            item.setup_gate(row.name, host)
            item.inventory_host = hosts.get(host) if host else None
            items.append(item)
    if hosts:
        # Each gate module that adds host items sorts them all: whichever hook runs last
        # leaves every host's items in lifecycle order, audit to pull.
        order_by_phase(items)


def order_by_phase(items: list[pytest.Item]) -> None:
    """The gate items in lifecycle order (audit before launch before watch before pull; in a
    phase, the gate table's order), in place; every other item keeps its place. Under
    ``--dist loadgroup`` a host's worker then audits the box before it watches the job."""
    from rentcheck.gates.table import all_gates, gate_named

    order = {gate.name: index for index, gate in enumerate(all_gates())}
    places = [i for i, item in enumerate(items) if isinstance(item, GateItem)]

    def lifecycle(item: Any) -> tuple[int, int]:
        return gate_named(item.gate).phase_index, order.get(item.gate, 0)

    ordered = sorted((items[i] for i in places), key=lifecycle)
    for place, item in zip(places, ordered, strict=True):
        items[place] = item


class GateRecorder:
    """Keeps each gate's outcome from the reports (on the controller, also under xdist),
    writes the ledger at the end (the controller only) and prints one line per gate."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outcomes: dict[tuple[str, str | None], dict[str, Any]] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Every gate's items in lifecycle order (lint's 0.1 s before smoke's 20 s), after
        each gate module added its own."""
        order_by_phase(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        gate = props.get(GATE_PROPERTY)
        # The call decides; setup and teardown count only when they did not pass.
        if gate is None or (report.when != "call" and report.passed):
            return
        host = props.get(HOST_PROPERTY)
        also = [str(v) for k, v in report.user_properties if k == ALSO_PROPERTY]
        for name in (str(gate), *also):
            key = (name, None if host is None else str(host))
            entry = self.outcomes.setdefault(key, {"by_outcome": {}, "codes": set()})
            entry["by_outcome"].setdefault(report.outcome, []).append(report.nodeid)
            codes = props.get(FAILING_PROPERTY)
            if report.failed and codes:
                entry["codes"].update(str(codes).split(","))
            if props.get(MANIFEST_PROPERTY):
                entry["manifest"] = str(props[MANIFEST_PROPERTY])
            if name == gate and props.get(EVIDENCE_PROPERTY):
                given = json.loads(str(props[EVIDENCE_PROPERTY]))
                for kind in ("evidence", "pass_evidence"):
                    entry.setdefault(kind, {}).update(given.get(kind) or {})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput") or not self.outcomes:
            return  # an xdist worker: the controller has every report and writes
        from rentcheck.errors import RentcheckError
        from rentcheck.gates.run import GateRun

        try:
            rc_config = load_project_config(self.config)
        except RentcheckError:
            return
        # The lint items are the whole project's (the plugin collects the config's directory
        # whatever paths pytest was given), so a lint verdict here is the project's.
        for (gate, host), outcome in sorted(self.outcomes.items(), key=_by_gate):
            failed = outcome["by_outcome"].get("failed", [])
            manifest = outcome.get("manifest")
            GateRun(rc_config, gate, host=host, manifest=manifest, via="pytest").record_outcome(
                passed=not failed and bool(outcome["by_outcome"].get("passed")),
                failing=sorted(outcome["codes"]) or (["test"] if failed else []),
                findings=len(failed),
                host=host,
                evidence=outcome.get("evidence"),
                pass_evidence=outcome.get("pass_evidence"),
            )

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if self.config.option.collectonly:
            return  # nothing ran: no verdict to give
        from rentcheck.gates.table import all_gates

        order = [g.name for g in all_gates()]
        for gate in sorted(requested_gates(self.config), key=order.index):
            merged: dict[str, list[str]] = {}
            for (name, _), outcome in self.outcomes.items():
                if name == gate:
                    for kind, nodeids in outcome["by_outcome"].items():
                        merged.setdefault(kind, []).extend(nodeids)
            failed = merged.get("failed", [])
            verdict = "FAILED" if failed or not merged else "PASSED"
            counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(merged.items()))
            terminalreporter.write_line(
                f"rentcheck {gate} gate: {verdict} ({counts or 'nothing ran'})"
            )
            for nodeid in failed:
                terminalreporter.write_line(f"  failed: {nodeid}")


def _by_gate(item: tuple[tuple[str, str | None], Any]) -> tuple[str, str]:
    return item[0][0], item[0][1] or ""

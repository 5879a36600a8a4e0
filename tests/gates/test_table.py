"""Everything that lists gates is derived from the gate table: held to it here."""

from __future__ import annotations

import importlib

from rentcheck import config
from rentcheck.gates.table import GATES, PHASES, command_index, gate_sections, gates_for


def test_config_sections_are_the_tables_sections() -> None:
    # config keeps a literal tuple (no import of the table on a lint run's start-up path)
    assert gate_sections(GATES) == config.SECTIONS


def test_every_gate_command_has_its_module() -> None:
    index = command_index(GATES)
    for gate in GATES:
        for command in gate.commands:
            assert command in index
            importlib.import_module(f"rentcheck.commands.{index[command]}")


def test_the_registry_knows_every_gates_rules() -> None:
    from rentcheck.registry import all_rules

    known = all_rules(with_plugins=False)
    for gate in GATES:
        if gate.rules is not None:
            module, attribute = gate.rules
            codes = {r.code for r in getattr(importlib.import_module(module), attribute)}
            assert codes <= set(known), gate.name


def test_pytest_serves_every_gate_module() -> None:
    from rentcheck.pytest_plugin import _gate_plugins

    wanted = {g.pytest_module for g in GATES if g.pytest_module} - {"rentcheck.pytest_plugin"}
    assert set(_gate_plugins()) == wanted
    for module in wanted:
        importlib.import_module(module)


def test_rows_are_consistent() -> None:
    names = [g.name for g in GATES]
    assert len(names) == len(set(names))
    for gate in GATES:
        assert gate.phase in (*PHASES, "maintenance")
        for requirement in gate.requires:
            assert requirement.gate in names
            assert set(requirement.match) <= {"digest", "host", "manifest"}
        if gate.settings is not None:
            module, _, function = gate.settings.partition(":")
            assert callable(getattr(importlib.import_module(module), function))
    assert [g.name for g in gates_for("pre-rent")] == ["lint", "smoke", "resume"]

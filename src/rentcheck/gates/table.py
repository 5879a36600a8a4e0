"""The gate table: one row per lifecycle gate, and every list of gates derived from it.

Adding a gate is one row (in ``builtin.py``, or a third-party ``Gate`` under the entry-point
group ``rentcheck.gates``) plus its package: the row names the CLI commands and the module that
registers them, the config section, where the gate's rules live, its pytest module, the
evidence it records in the ledger and the gates it requires. ``tests/gates/test_table.py``
holds the derived lists to this table.
"""

from __future__ import annotations

from functools import cache, lru_cache

from rentcheck.gates.builtin import GATES
from rentcheck.gates.row import FILES_SEEN, MAINTENANCE, PHASES, Gate, Proof, Requirement

__all__ = [
    "FILES_SEEN",
    "GATES",
    "GATE_ENTRY_POINT_GROUP",
    "MAINTENANCE",
    "PHASES",
    "Gate",
    "Proof",
    "Requirement",
    "all_gates",
    "command_index",
    "command_modules",
    "gate_named",
    "gate_sections",
    "gates_for",
]

GATE_ENTRY_POINT_GROUP = "rentcheck.gates"


# Commands that are tools, not gates: (command, module under rentcheck.commands).
TOOL_COMMANDS: tuple[tuple[str, str], ...] = (
    ("rules", "rules"),
    ("rule", "rules"),
    ("config", "config_cmd"),
    ("gate", "gate"),
    ("status", "gate"),
    ("merge", "merge"),
    ("report", "report"),
    ("init", "init"),
)

# The command modules of a gate's commands that are not its own module's name.
_MODULE_OF_COMMAND = {"profiles": "profiles", "manifest": "manifest"}


@lru_cache(maxsize=1)
def all_gates() -> tuple[Gate, ...]:
    """The built-in gates, then third-party gates from the ``rentcheck.gates`` entry points."""
    from rentcheck.errors import ConfigError
    from rentcheck.plugins import entry_points

    found = list(GATES)
    names = {gate.name for gate in found}
    for ep in entry_points(GATE_ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken third-party gate must name itself
            raise ConfigError(
                f"gate {ep.name!r} ({ep.value}) failed to load: {exc}",
                hint=f"fix or uninstall the package that provides it (`python -c 'import "
                f"{ep.module}'` must work)",
            ) from exc
        rows = list(loaded) if isinstance(loaded, (list, tuple)) else [loaded]
        for row in rows:
            if not isinstance(row, Gate):
                raise ConfigError(
                    f"entry point {ep.name!r} of {GATE_ENTRY_POINT_GROUP} gave "
                    f"{type(row).__name__}, not a rentcheck Gate row",
                    hint="the entry point loads to a rentcheck.gates.table.Gate",
                )
            if row.name in names:
                raise ConfigError(
                    f"gate {row.name!r} is defined twice", hint="a plugin gate needs its own name"
                )
            names.add(row.name)
            found.append(row)
    return tuple(found)


def gate_named(name: str) -> Gate:
    """The gate called ``name``; a UsageError naming the known gates otherwise."""
    for gate in all_gates():
        if gate.name == name:
            return gate
    from rentcheck.errors import UsageError

    raise UsageError(f"unknown gate {name!r}", hint="known gates: " + known_names())


def known_names() -> str:
    return ", ".join(g.name for g in all_gates()) + " (or a phase: " + ", ".join(PHASES) + ")"


def gates_for(name: str) -> tuple[Gate, ...]:
    """A gate by name, or every gate of a lifecycle phase (``pre-rent``: lint, smoke, resume)."""
    in_phase = tuple(g for g in all_gates() if g.phase == name)
    return in_phase or (gate_named(name),)


def command_index(gates: tuple[Gate, ...] | None = None) -> dict[str, str]:
    """Which ``rentcheck.commands`` module registers each subcommand (one import per run).
    A gate without a module of its own gets the generic one (``gate``)."""
    index: dict[str, str] = {}
    for gate in GATES if gates is None else gates:
        for command in gate.commands:
            index[command] = _MODULE_OF_COMMAND.get(command, gate.cli_module or "gate")
    index.update(TOOL_COMMANDS)
    return index


def command_modules(gates: tuple[Gate, ...] | None = None) -> tuple[str, ...]:
    """Every command module, each once, in the order of ``rentcheck --help``."""
    return tuple(dict.fromkeys(command_index(gates).values()))


def gate_sections(gates: tuple[Gate, ...] | None = None) -> tuple[str, ...]:
    """The config tables owned by gates, plus ``python`` (the lint gate's training paths)."""
    rows = all_gates() if gates is None else gates
    return tuple(dict.fromkeys(["python", *(g.section for g in rows if g.section)]))


def section_of_code(code: str) -> str:
    """The config section of the gate whose rules include ``code`` (a code or prefix)."""
    for gate in all_gates():
        if any(rule_code.startswith(code) for rule_code in gate_rule_codes(gate.name)):
            return gate.section or gate.name
    return "GATE"  # not reached: the caller saw the code among the gates' rules


@cache
def gate_rule_codes(name: str) -> frozenset[str]:
    """The codes of one gate's own rules (empty for a gate without rules)."""
    import importlib

    gate = gate_named(name)
    if gate.rules is None:
        return frozenset()
    module, attribute = gate.rules
    return frozenset(rule.code for rule in getattr(importlib.import_module(module), attribute))

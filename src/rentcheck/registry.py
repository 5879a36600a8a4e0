"""The explicit table of built-in rules, plus third-party rule packs from entry points.

A rule pack is an entry point in the group ``rentcheck.rules`` that loads to an iterable of
``FileCheck``/``ProjectCheck`` objects (or to a zero-argument callable returning one). Packs are
loaded only when a command needs the rule set, never on import.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from rentcheck.errors import ConfigError
from rentcheck.lazy_regex import lazy_regex
from rentcheck.lint import gitattributes, line_endings, shebang
from rentcheck.lint.check import FileCheck, ProjectCheck
from rentcheck.lint.python import checkpoint_rules, device_rules, ruff_bridge
from rentcheck.lint.shell import (
    copy_success,
    defaults,
    detach,
    grep_stdin,
    guard,
    loops,
    remote_probe,
    secrets,
    self_match,
    transfer,
)
from rentcheck.meta_rules import UNKNOWN_CODE_RULE, UNUSED_SUPPRESSION_RULE
from rentcheck.model import Rule
from rentcheck.record import record

__all__ = ["ENTRY_POINT_GROUP", "RuleSet", "all_rules", "load_rule_set"]

ENTRY_POINT_GROUP = "rentcheck.rules"
CODE_RE = lazy_regex(r"^[A-Z]{2,8}[0-9]{3,4}$")

Check = FileCheck | ProjectCheck

# The order here is the order of `rentcheck rules`.
BUILTIN_CHECKS: tuple[Check, ...] = (
    line_endings.CHECK,
    gitattributes.CHECK,
    shebang.CHECK,
    copy_success.CHECK,
    grep_stdin.CHECK,
    self_match.SELF_MATCH,
    self_match.KILL_RELAUNCH,
    detach.UNEXPORTED,
    detach.STDIN,
    detach.BUFFERED,
    defaults.CHECK,
    loops.SWALLOW,
    secrets.CHECK,
    loops.UNBOUNDED,
    transfer.CHECK,
    remote_probe.PROBE,
    remote_probe.WRONG_NODE,
    guard.UNGUARDED,
    guard.PARTIAL,
    checkpoint_rules.NONATOMIC,
    device_rules.MAIN_GUARD,
    checkpoint_rules.LOAD,
    device_rules.CUDA,
    checkpoint_rules.NO_RESUME,
    checkpoint_rules.TRACKER,
    ruff_bridge.RUFF,
)

# Rules with no check function of their own: the engine emits them.
ENGINE_RULES: tuple[Rule, ...] = (
    ruff_bridge.RUFF_MISSING_RULE,
    UNUSED_SUPPRESSION_RULE,
    UNKNOWN_CODE_RULE,
)


def gate_rules() -> tuple[Rule, ...]:
    """The rules of the other gates (audit, pull, smoke, profiles, ...), from the gate table:
    their commands produce the findings; listing them here makes `rentcheck rule CODE`,
    config validation and SARIF know them. Imported only when a command asks for every rule,
    so a lint run does not pay for the gates' modules."""
    import importlib

    from rentcheck.gates.rules import ORDER_RULES
    from rentcheck.gates.table import all_gates

    found: list[Rule] = list(ORDER_RULES)
    sources = dict.fromkeys(gate.rules for gate in all_gates() if gate.rules is not None)
    for source in sources:
        if source is not None:
            module, attribute = source
            found.extend(getattr(importlib.import_module(module), attribute))
    return tuple(found)


@record
class RuleSet:
    """Every known rule with the check that implements it (None for engine rules)."""

    rules: dict[str, Rule]
    file_checks: tuple[FileCheck, ...]
    project_checks: tuple[ProjectCheck, ...]
    plugins: tuple[str, ...]


def _plugin_checks() -> tuple[list[Check], list[str]]:
    checks: list[Check] = []
    names: list[str] = []
    from rentcheck.plugins import entry_points

    for ep in entry_points(ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
            items = loaded() if callable(loaded) else loaded
            pack = list(items)
        except Exception as exc:  # a broken third-party pack must name itself
            raise ConfigError(
                f"rule pack {ep.name!r} ({ep.value}) failed to load: {exc}",
                hint=f"fix or uninstall the package that provides it, or check that "
                f"`python -c 'import {ep.module}'` works",
            ) from exc
        for item in pack:
            if not isinstance(item, (FileCheck, ProjectCheck)):
                raise ConfigError(
                    f"rule pack {ep.name!r} yielded {type(item).__name__}, not a check",
                    hint="a pack yields rentcheck.FileCheck or rentcheck.ProjectCheck objects",
                )
            checks.append(item)
        names.append(ep.name)
    return checks, names


def _build(checks: Iterable[Check], plugins: list[str], gates: Iterable[Rule]) -> RuleSet:
    rules: dict[str, Rule] = {}
    all_checks = tuple(checks)
    for rule in [c.rule for c in all_checks] + list(ENGINE_RULES) + list(gates):
        if not CODE_RE.match(rule.code):
            raise ConfigError(f"rule code {rule.code!r} is malformed", hint="use e.g. ABC123")
        if rule.code in rules:
            raise ConfigError(
                f"rule code {rule.code} is defined twice ({rules[rule.code].name}, {rule.name})",
                hint="a plugin must use its own code prefix",
            )
        rules[rule.code] = rule
    return RuleSet(
        rules=rules,
        file_checks=tuple(c for c in all_checks if isinstance(c, FileCheck)),
        project_checks=tuple(c for c in all_checks if isinstance(c, ProjectCheck)),
        plugins=tuple(plugins),
    )


@lru_cache(maxsize=2)
def load_rule_set(with_plugins: bool = True, with_gates: bool = True) -> RuleSet:
    """Every rule and check; ``with_gates=False`` leaves out the other gates' rule metadata
    (a lint run needs only its checks and imports less)."""
    extra, names = _plugin_checks() if with_plugins else ([], [])
    return _build(list(BUILTIN_CHECKS) + extra, names, gate_rules() if with_gates else ())


def all_rules(with_plugins: bool = True) -> dict[str, Rule]:
    return load_rule_set(with_plugins).rules

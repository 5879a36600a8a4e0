"""The explicit table of built-in rules, plus third-party rule packs from entry points.

A rule pack is an entry point in the group ``rentcheck.rules`` that loads to an iterable of
``FileCheck``/``ProjectCheck``/``BoxCheck``/``GateCheck`` objects (or to a zero-argument
callable returning one); see ``rentcheck.rulepack``. Packs are loaded only when a command
needs the rule set, never on import. A pack that fails to load, or uses a code prefix
rentcheck or an earlier pack owns, is named in one warning line and skipped.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from functools import lru_cache

from rentcheck.errors import ConfigError
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
from rentcheck.model import Finding, Rule
from rentcheck.record import field, record
from rentcheck.rulepack import BoxCheck, GateCheck

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from importlib.metadata import EntryPoint
    from typing import Any

__all__ = [
    "ENTRY_POINT_GROUP",
    "RuleSet",
    "all_rules",
    "box_checks",
    "gate_checks",
    "load_rule_set",
    "rule_origins",
    "run_plugin_checks",
]

ENTRY_POINT_GROUP = "rentcheck.rules"
CODE_RE = re.compile(r"^[A-Z]{2,8}[0-9]{3,4}$")

Check = FileCheck | ProjectCheck | BoxCheck | GateCheck
_CHECK_TYPES = (FileCheck, ProjectCheck, BoxCheck, GateCheck)

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
    # Plugin checks of a box's audit facts and of a gate's outcome (rentcheck.rulepack).
    box_checks: tuple[BoxCheck, ...] = ()
    gate_checks: tuple[GateCheck, ...] = ()
    # code -> where the rule comes from: "rentcheck" or "plugin NAME (module)".
    origins: dict[str, str] = field(default_factory=dict)
    # One line per rule pack that was skipped, naming it and why.
    broken: tuple[str, ...] = ()


BUILTIN_ORIGIN = "rentcheck"


def code_prefix(code: str) -> str:
    """The letters of a rule code (``SLR`` of ``SLR001``): the family a pack owns."""
    return code.rstrip("0123456789")


@record
class _Pack:
    name: str
    origin: str
    checks: tuple[Check, ...]


def _load_pack(ep: EntryPoint) -> tuple[Check, ...]:
    loaded = ep.load()
    items = loaded() if callable(loaded) else loaded
    pack = tuple(items)
    for item in pack:
        if not isinstance(item, _CHECK_TYPES):
            raise TypeError(
                f"it yielded {type(item).__name__}, not a check (a pack yields what "
                "rentcheck.file_rule, box_rule and gate_rule return)"
            )
        if not CODE_RE.match(item.rule.code):
            raise TypeError(f"its rule code {item.rule.code!r} is malformed (use e.g. ABC123)")
        if isinstance(item, GateCheck):
            _known_gate(item)
    return pack


def _known_gate(check: GateCheck) -> None:
    from rentcheck.gates.table import all_gates

    names = [gate.name for gate in all_gates()]
    if check.gate not in names:
        raise TypeError(
            f"its rule {check.rule.code} applies to gate {check.gate!r}, which does not exist "
            f"(known: {', '.join(names)})"
        )


def _plugin_packs() -> tuple[list[_Pack], list[str]]:
    """The packs that load, and one line for each that does not: a broken third-party pack
    names itself and is skipped, so one bad install never stops a run."""
    from rentcheck.plugins import entry_points

    packs: list[_Pack] = []
    broken: list[str] = []
    for ep in entry_points(ENTRY_POINT_GROUP):
        try:
            checks = _load_pack(ep)
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code skips that pack
            broken.append(
                f"rule pack {ep.name!r} ({ep.value}) skipped: {type(exc).__name__}: {exc}; "
                f"fix or uninstall the package that provides it "
                f"(check `python -c 'import {ep.module}'`)"
            )
            continue
        packs.append(_Pack(name=ep.name, origin=f"plugin {ep.name} ({ep.module})", checks=checks))
    return packs, broken


def _build(
    checks: Iterable[Check], packs: list[_Pack], gates: Iterable[Rule], broken: list[str]
) -> RuleSet:
    rules: dict[str, Rule] = {}
    origins: dict[str, str] = {}
    all_checks = list(checks)
    for rule in [c.rule for c in all_checks] + list(ENGINE_RULES) + list(gates):
        if not CODE_RE.match(rule.code):
            raise ConfigError(f"rule code {rule.code!r} is malformed", hint="use e.g. ABC123")
        if rule.code in rules:
            raise ConfigError(
                f"rule code {rule.code} is defined twice ({rules[rule.code].name}, {rule.name})",
                hint="give each rule its own code",
            )
        rules[rule.code] = rule
        origins[rule.code] = BUILTIN_ORIGIN
    owners = {code_prefix(code): BUILTIN_ORIGIN for code in rules}
    loaded: list[str] = []
    for pack in packs:
        prefixes = {code_prefix(c.rule.code) for c in pack.checks}
        taken = sorted(f"{p} (owned by {owners[p]})" for p in prefixes if p in owners)
        codes = [c.rule.code for c in pack.checks]
        twice = sorted({c for c in codes if codes.count(c) > 1})
        if taken or twice:
            why = f"code prefix {', '.join(taken)}" if taken else f"code {twice[0]} twice"
            broken.append(
                f"rule pack {pack.name!r} skipped: it uses {why}; "
                "a pack must use a code prefix of its own"
            )
            continue
        for check in pack.checks:
            rules[check.rule.code] = check.rule
            origins[check.rule.code] = pack.origin
        owners.update(dict.fromkeys(prefixes, pack.origin))
        all_checks.extend(pack.checks)
        loaded.append(pack.name)
    return RuleSet(
        rules=rules,
        file_checks=tuple(c for c in all_checks if isinstance(c, FileCheck)),
        project_checks=tuple(c for c in all_checks if isinstance(c, ProjectCheck)),
        plugins=tuple(loaded),
        box_checks=tuple(c for c in all_checks if isinstance(c, BoxCheck)),
        gate_checks=tuple(c for c in all_checks if isinstance(c, GateCheck)),
        origins=origins,
        broken=tuple(broken),
    )


_REPORTED: set[str] = set()


def _warn_broken(broken: Iterable[str]) -> None:
    """One stderr line per skipped pack, once per process (the set is loaded up to twice)."""
    for line in broken:
        if line not in _REPORTED:
            _REPORTED.add(line)
            sys.stderr.write(f"rentcheck: warning: {line}\n")


@lru_cache(maxsize=2)
def load_rule_set(with_plugins: bool = True, with_gates: bool = True) -> RuleSet:
    """Every rule and check; ``with_gates=False`` leaves out the other gates' rule metadata
    (a lint run needs only its checks and imports less)."""
    packs, broken = _plugin_packs() if with_plugins else ([], [])
    rule_set = _build(BUILTIN_CHECKS, packs, gate_rules() if with_gates else (), broken)
    _warn_broken(rule_set.broken)
    return rule_set


def box_checks() -> tuple[BoxCheck, ...]:
    """The plugins' checks of a box's audit facts (the audit gate runs them)."""
    return load_rule_set(with_gates=False).box_checks


def gate_checks(gate: str) -> tuple[GateCheck, ...]:
    """The plugins' checks of the outcome of ``gate`` (its judgement runs them)."""
    return tuple(c for c in load_rule_set(with_gates=False).gate_checks if c.gate == gate)


def origin_of(code: str) -> str:
    """Where the rule ``code`` comes from, without loading the gates' rule modules."""
    return load_rule_set(with_gates=False).origins.get(code, BUILTIN_ORIGIN)


def run_plugin_checks(checks: Iterable[BoxCheck | GateCheck], subject: Any) -> list[Finding]:
    """Every finding of ``checks`` on ``subject``; a check that raises, or returns anything
    but findings of its own rule, is named in one warning and skipped (foreign code never
    stops a gate)."""
    found: list[Finding] = []
    for check in checks:
        code = check.rule.code
        try:
            results = list(check.run(subject))
            wrong = [r for r in results if not isinstance(r, Finding) or r.code != code]
            if wrong:
                what = wrong[0].code if isinstance(wrong[0], Finding) else type(wrong[0]).__name__
                raise TypeError(f"it returned {what}, not a finding of {code}")
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code skips that rule
            _warn_broken(
                [
                    f"rule {code} ({origin_of(code)}) skipped: {type(exc).__name__}: {exc}; "
                    "fix or uninstall the package that provides it"
                ]
            )
            continue
        found.extend(results)
    return found


def all_rules(with_plugins: bool = True) -> dict[str, Rule]:
    return load_rule_set(with_plugins).rules


def rule_origins() -> dict[str, str]:
    """Where each rule comes from (``rentcheck`` or the plugin), for ``rentcheck rules``."""
    return load_rule_set().origins

"""One judgement of every gate's findings: which count, which fail, and the exit code.

Each gate returns a ``GateResult``; ``judge`` applies that gate's own selection (the lint
gate: the top-level ``select``/``ignore``/``per-file-ignores``; every other gate: the same
keys inside its ``[tool.rentcheck.<section>]`` table), its advisory codes and the fail level,
checks what the gate saw against what its row says it must see (``Gate.proves``: seeing
less is RC914, never a pass), and gives the verdict. The CLI and the pytest items both call
it, and every surface reads the verdict it returns: the headline (``headline_of``), the
ledger line, the evidence kept only on a pass, the marker, the report and the exit code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rentcheck.config import Config, code_matches, section_error
from rentcheck.errors import ConfigError
from rentcheck.model import Finding, Severity
from rentcheck.pathmatch import matches_any
from rentcheck.record import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from rentcheck.gates.table import Proof
    from rentcheck.model import Rule

__all__ = ["GateResult", "Verdict", "headline_of", "judge", "selection_of"]


@record(frozen=False)
class GateResult:
    """What one run of a gate found, before judgement; ``extras`` are gate-specific facts."""

    gate: str
    findings: list[Finding]
    extras: dict[str, Any] = field(default_factory=dict)
    files_checked: int = 0
    fixed: int = 0
    suppressed: int = 0
    advisory: frozenset[str] = frozenset()  # codes reported but never failing
    host: str | None = None
    profile: str | None = None
    evidence: dict[str, str] = field(default_factory=dict)  # e.g. manifest digest
    headline: tuple[str, ...] = ()  # lines a person reads first (facts, not the verdict)
    # The headline as a function of the verdict (passed?): a gate that words its verdict
    # ("teardown gate passed: ...") says it through this, never from its own judgement.
    say: Callable[[bool], Sequence[str]] | None = None
    proved: str | None = None  # what a clean run proved, in the gate's words
    partial: bool = False  # checked part of the project only: proves nothing for the ledger
    # What the run saw, by the counters its row's ``proves`` names (files, optimizer_steps...)
    seen: dict[str, int] = field(default_factory=dict)
    # Evidence the ledger keeps only when the verdict is a pass (teardown's approval).
    pass_evidence: dict[str, str] = field(default_factory=dict)


@record
class Verdict:
    findings: tuple[Finding, ...]  # those the selection keeps
    failing: tuple[Finding, ...]
    fail_level: Severity
    exit_code: int

    @property
    def passed(self) -> bool:
        return not self.failing


@record
class Selection:
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    per_file_ignores: Mapping[str, tuple[str, ...]]
    fail_level: Severity


# Codes of the ordering rules: a missing prerequisite is passed with --force --reason (and
# recorded), never switched off by a selection; nor is a gate that saw nothing (RC914).
ALWAYS_COUNTED = ("RC910", "RC911", "RC912", "RC913", "RC914")


def selection_of(config: Config, section: str | None) -> Selection:
    """The selection a gate judges with: top-level for lint, its own section otherwise."""
    if section is None:
        return Selection(
            config.select + config.extend_select,
            config.ignore,
            config.per_file_ignores,
            config.fail_level,
        )
    table = config.section(section)
    level = config.fail_level
    if "fail-level" in table:
        try:
            level = Severity.parse(str(table["fail-level"]))
        except ValueError as exc:
            raise section_error(config, section, "fail-level", str(exc)) from None
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise section_error(
            config,
            section,
            "per-file-ignores",
            "must map globs to code lists",
            'e.g. "ckpt/*.pt" = ["RC516"]',
        )
    return Selection(
        _codes(config, section, "select", table.get("select", ["ALL"])),
        _codes(config, section, "ignore", table.get("ignore", [])),
        {str(g): _codes(config, section, f"per-file-ignores.{g}", v) for g, v in pfi.items()},
        level,
    )


def _codes(config: Config, section: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise section_error(config, section, key, "must be a list of codes", 'e.g. ["RC301"]')
    return tuple(v.strip() for v in value if v.strip())


def check_selection(
    config: Config, section: str, selection: Selection, rules: Mapping[str, Rule]
) -> None:
    """Refuse a code in a gate's selection that no rule has (a typo must not switch a gate
    off silently)."""
    from rentcheck.config import suggest_code

    tokens = [("select", t) for t in selection.select] + [("ignore", t) for t in selection.ignore]
    tokens += [
        (f"per-file-ignores.{g}", t) for g, c in selection.per_file_ignores.items() for t in c
    ]
    for key, token in tokens:
        if not any(code_matches(code, token) for code in rules):
            problem = f"unknown rule code {token!r}"
            raise section_error(config, section, key, problem, suggest_code(token, rules))


def _refuse_top_level_codes(config: Config, gate: str, section: str) -> None:
    """A code of this gate in lint's top-level select/ignore would do nothing here: say
    where it belongs rather than let it look like it worked."""
    from rentcheck.gates.table import gate_rule_codes

    tokens = [("select", t) for t in config.select + config.extend_select if t != "ALL"]
    tokens += [("ignore", t) for t in config.ignore]
    tokens += [("per-file-ignores", t) for c in config.per_file_ignores.values() for t in c]
    codes = gate_rule_codes(gate)
    for key, token in tokens:
        if len(token.strip()) > 2 and any(code_matches(code, token) for code in codes):
            where = config.origins.get(key.split(".")[0], "the settings")
            raise ConfigError(
                f"{token!r} in {key!r} of {where} is a rule of the {gate} gate, but the "
                "top-level select/ignore apply to lint only",
                hint=f"put it under [tool.rentcheck.{section}] {key}",
            )


def judge(
    config: Config,
    result: GateResult,
    *,
    section: str | None,
    exit_zero: bool = False,
    rules: Mapping[str, Rule] | None = None,
    proves: Sequence[Proof] | None = None,
) -> Verdict:
    """The verdict on ``result`` under ``config``'s selection for the gate's ``section``.

    ``proves`` is what the gate must have seen (its row's, by default; ``()`` for a run that
    only checks prerequisites): when nothing else fails and the run saw less, RC914 fails it.
    """
    selection = selection_of(config, section)
    if section is not None and rules is not None:
        check_selection(config, section, selection, rules)
        _refuse_top_level_codes(config, result.gate, section)
    findings = [*result.findings, *plugin_findings(result)]
    kept = tuple(f for f in findings if _counted(f, selection))
    failing = tuple(
        f for f in kept if f.severity >= selection.fail_level and f.code not in result.advisory
    )
    if not failing and not result.partial:
        unseen = tuple(_unseen(result, _proves_of(result.gate) if proves is None else proves))
        kept, failing = kept + unseen, unseen
    return Verdict(kept, failing, selection.fail_level, 0 if exit_zero or not failing else 1)


def _proves_of(gate: str) -> Sequence[Proof]:
    from rentcheck.errors import UsageError
    from rentcheck.gates.table import gate_named

    try:
        return gate_named(gate).proves
    except UsageError:  # not a gate of the table (a tool's own result): nothing declared
        return ()


def seen_count(result: GateResult, counter: str) -> int:
    """How many of ``counter`` the run saw (``files`` falls back to ``files_checked``)."""
    if counter in result.seen:
        return int(result.seen[counter])
    return result.files_checked if counter == "files" else 0


def _unseen(result: GateResult, proves: Sequence[Proof]) -> list[Finding]:
    """RC914 for each proof the run fell short of: what was missing and how to provide it."""
    from rentcheck.gates.rules import NO_EVIDENCE

    found = []
    for proof in proves:
        count = seen_count(result, proof.counter)
        if count < proof.minimum:
            found.append(
                NO_EVIDENCE.finding(
                    f"the {result.gate} gate saw {count} {proof.what} (it must see at least "
                    f"{proof.minimum} to pass): {proof.how}",
                    host=result.host,
                    details={"counter": proof.counter, "seen": count, "minimum": proof.minimum},
                )
            )
    return found


def headline_of(result: GateResult, verdict: Verdict) -> tuple[str, ...]:
    """The lines a person reads first, worded from the one verdict."""
    said = tuple(result.say(verdict.passed)) if result.say is not None else ()
    return said + tuple(result.headline)


def plugin_findings(result: GateResult) -> list[Finding]:
    """The findings of the installed rule packs' rules on this gate's outcome
    (``rentcheck.gate_rule``): judged below like the gate's own."""
    from rentcheck.registry import gate_checks, run_plugin_checks

    checks = gate_checks(result.gate)
    if not checks:
        return []
    from rentcheck.rulepack import GateOutcome

    outcome = GateOutcome(
        gate=result.gate,
        host=result.host,
        findings=tuple(result.findings),
        extras=result.extras,
        files_checked=result.files_checked,
    )
    return run_plugin_checks(checks, outcome)


def _counted(finding: Finding, selection: Selection) -> bool:
    code = finding.code
    if code in ALWAYS_COUNTED:
        return True
    if not any(code_matches(code, t) for t in selection.select):
        return False
    if any(code_matches(code, t) for t in selection.ignore):
        return False
    if finding.path is None:
        return True
    return not any(
        matches_any(finding.path, [glob]) and any(code_matches(code, c) for c in codes)
        for glob, codes in selection.per_file_ignores.items()
    )


def failing_lines(findings: Sequence[Finding]) -> list[str]:
    """``where: CODE message`` lines, as the text report shows them (the pytest items)."""
    from rentcheck.report.text import finding_line

    return [finding_line(f) for f in sorted(findings, key=Finding.sort_key)]

"""The public helpers a third-party rule pack is written with.

A rule pack is a distribution with an entry point in the group ``rentcheck.rules`` that loads to
an iterable of checks (or a zero-argument callable returning one). Each check pairs a ``Rule``
(the same metadata the built-in rules carry; its code uses a prefix the pack owns, e.g.
``SLR``) with what it applies to and a pure function to findings. There are three kinds:

- ``file_rule``: one project file (``SourceFile``) at a time, in ``rentcheck check``;
- ``box_rule``: the facts the audit probe measured on one box (``BoxFacts``), in every audit
  (``rentcheck audit``, ``--hosts``, the pytest items), judged by ``[tool.rentcheck.audit]``;
- ``gate_rule``: the outcome of one named gate (``GateOutcome``), wherever that gate is
  judged, by that gate's own config section.

::

    from rentcheck import Finding, Rule, box_rule, file_rule, gate_rule

    CHECKS = [
        file_rule(MY_RULE, my_check, globs=("*.sbatch",), containing=b"#SBATCH"),
        box_rule(LOW_DISK, lambda box: [...]),
        gate_rule(SLOW_PROBE, lambda outcome: [...], gate="audit"),
    ]

    # pyproject.toml of the pack
    [project.entry-points."rentcheck.rules"]
    slurm = "rentcheck_slurm:CHECKS"

A pack that fails to import, yields something that is not a check, or reuses a code prefix that
another pack or rentcheck owns is named in a warning and skipped; the run goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Rule
from rentcheck.pathmatch import matcher
from rentcheck.record import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BoxCheck",
    "BoxFacts",
    "GateCheck",
    "GateOutcome",
    "box_rule",
    "file_rule",
    "gate_rule",
]


@record
class BoxFacts:
    """What the audit probe measured on one box, as a box rule sees it.

    ``facts`` is the probe's JSON answer (``rentcheck audit --output-format json`` shows it
    under ``facts``: ``paths.ROLE.space.bytes_free``, ``paths.ROLE.mount.fstype``,
    ``gpu``, ``torch``, ``memory``, ``tools`` ...); any part may be missing on a box that
    could not read it, so read it with ``fact``. ``paths`` maps each role the audit was asked
    about (``[tool.rentcheck.audit.paths]``, ``--path``) to its path on the box.
    """

    host: str
    facts: Mapping[str, Any]
    paths: Mapping[str, str]

    def fact(self, *keys: str) -> Any:
        """``facts[k1][k2]...``, or None where any level is missing."""
        current: Any = self.facts
        for key in keys:
            if not isinstance(current, Mapping):
                return None
            current = current.get(key)
        return current


@record
class GateOutcome:
    """One gate's result as a gate rule sees it, before judgement: the gate, the host it
    ran for (None for a project gate), its findings, its gate-specific extras (the
    ``extras`` of the JSON report, e.g. the audit's ``transport`` and ``facts``) and how
    many files it checked (lint, verify)."""

    gate: str
    host: str | None
    findings: tuple[Finding, ...]
    extras: Mapping[str, Any]
    files_checked: int = 0


@record
class BoxCheck:
    """A pure check of one box's audit facts (``box_rule`` builds it)."""

    rule: Rule
    run: Callable[[BoxFacts], Iterable[Finding]]


@record
class GateCheck:
    """A pure check of one gate's outcome (``gate_rule`` builds it)."""

    rule: Rule
    gate: str
    run: Callable[[GateOutcome], Iterable[Finding]]


def box_rule(rule: Rule, check: Callable[[BoxFacts], Iterable[Finding]]) -> BoxCheck:
    """A check the audit gate runs on every box it audits, after the built-in rules; its
    findings are judged by ``[tool.rentcheck.audit]`` (select, ignore, fail-level) like the
    RC3xx rules. Build findings with ``rule.finding(message, host=box.host)``."""
    return BoxCheck(rule=rule, run=check)


def gate_rule(
    rule: Rule, check: Callable[[GateOutcome], Iterable[Finding]], *, gate: str
) -> GateCheck:
    """A check of the outcome of the gate named ``gate`` (``audit``, ``watch``, ``verify``,
    a plugin's gate ...), run wherever that gate is judged (its CLI command, ``--hosts``, the
    pytest items) and judged by that gate's config section."""
    return GateCheck(rule=rule, gate=gate, run=check)


def file_rule(
    rule: Rule,
    check: Callable[[SourceFile], Iterable[Finding]],
    *,
    globs: Iterable[str] = (),
    kinds: Iterable[FileKind] = (),
    containing: bytes | None = None,
) -> FileCheck:
    """A check of one file at a time. It applies to a text file whose project-relative path
    matches one of ``globs`` (gitignore-style: ``*.sbatch``, ``k8s/**/*.yaml``) or whose kind is
    one of ``kinds``, and, when ``containing`` is given, whose bytes include it. With neither
    globs nor kinds it applies to every text file that passes ``containing``."""
    patterns = tuple(globs)
    wanted = frozenset(kinds)
    path_hits = matcher(patterns) if patterns else None

    def applies(source: SourceFile) -> bool:
        if source.is_binary:
            return False
        if patterns or wanted:
            by_path = path_hits is not None and path_hits(source.path)
            if not by_path and source.kind not in wanted:
                return False
        return containing is None or containing in source.data

    return FileCheck(rule=rule, applies=applies, run=check, content_only=True)

"""The data every check produces and every report consumes: rules, findings, fixes."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from rentcheck.record import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Applicability",
    "Edit",
    "Finding",
    "Fix",
    "Rule",
    "RuleStatus",
    "Severity",
]


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``>=`` compares against ``--fail-level``."""

    NOTE = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (use one of: {names})") from None

    @property
    def label(self) -> str:
        return self.name.lower()


class Applicability(enum.Enum):
    """Whether ``--fix`` may apply a rule's fix without a person looking at it."""

    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # shown as a suggestion, never applied automatically
    NONE = "none"  # the fix needs a decision only a person can make


class RuleStatus(enum.Enum):
    STABLE = "stable"
    PREVIEW = "preview"


@record
class Rule:
    """Everything a person needs to understand one check; ``rentcheck rule CODE`` prints it."""

    code: str
    name: str
    family: str
    summary: str
    why: str
    example_bad: str
    example_good: str
    fix: str
    fix_applicability: Applicability
    default_severity: Severity
    status: RuleStatus = RuleStatus.STABLE

    def finding(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        col: int | None = None,
        end_line: int | None = None,
        end_col: int | None = None,
        host: str | None = None,
        severity: Severity | None = None,
        details: Mapping[str, Any] | None = None,
        fix: Fix | None = None,
    ) -> Finding:
        """A finding of this rule (its code, its default severity unless ``severity``): the
        one way every check and gate builds one."""
        return Finding(
            code=self.code,
            severity=self.default_severity if severity is None else severity,
            message=message,
            path=path,
            line=line,
            col=col,
            end_line=end_line,
            end_col=end_col,
            host=host,
            details={} if details is None else details,
            fix=fix,
        )


@record
class Edit:
    """Replace the whole content of ``path`` with ``content`` (fixes here are whole-file)."""

    path: str
    content: bytes


@record
class Fix:
    description: str
    applicability: Applicability
    edits: tuple[Edit, ...] = ()


@record
class Finding:
    """One problem at one place. ``path`` is relative to the project root when it has one."""

    code: str
    severity: Severity
    message: str
    path: str | None = None
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    host: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    fix: Fix | None = None

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path or "", self.line or 0, self.col or 0, self.code)

    def location(self) -> str:
        """``path:line:col`` as editors and CI annotations understand it."""
        where = self.path or (self.host or "<project>")
        if self.line is not None:
            where += f":{self.line}:{self.col or 1}"
        return where

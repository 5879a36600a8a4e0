"""A Report owns what a run found, the summary text and the exit code; formats render it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from rentcheck.model import Finding, Rule, Severity
from rentcheck.record import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "Report", "render"]

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


@record(frozen=False)
class Report:
    command: str
    findings: list[Finding]
    rules: Mapping[str, Rule]
    config_digest: str
    fail_level: Severity = Severity.WARNING
    exit_zero: bool = False
    files_checked: int = 0
    fixed: int = 0
    suppressed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # gate-specific fields (facts, ...)
    # The findings the gate's one verdict (rentcheck.gates.judge) says fail. A report has no
    # judgement of its own: built without a verdict (a renderer's test), nothing fails.
    judged_failing: tuple[Finding, ...] = ()
    # What a clean run proved, in the gate's words ("12 files, 9.4 GB, all digests match"),
    # said instead of the generic "All checks passed" (None: the generic line).
    proved: str | None = None
    # The project root the findings' paths are relative to (None: the working directory);
    # SARIF reads a flagged line's text from here for its fingerprint.
    root: str | None = None
    # -q/--quiet: the terminal formats print the findings and nothing else.
    quiet: bool = False

    @property
    def failing(self) -> list[Finding]:
        return list(self.judged_failing)

    @property
    def exit_code(self) -> int:
        return EXIT_CLEAN if self.exit_zero or not self.failing else EXIT_FINDINGS

    def counts_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def counts_by_severity(self) -> dict[str, int]:
        counts = Counter(f.severity.label for f in self.findings)
        return {s.label: counts.get(s.label, 0) for s in sorted(Severity, reverse=True)}

    @property
    def fixable(self) -> int:
        return sum(
            1 for f in self.findings if f.fix is not None and f.fix.applicability.value == "safe"
        )

    def summary_text(self) -> str:
        # Gates that judge runs or hosts rather than files say nothing about a file count.
        counted = self.files_checked > 0 or self.command in ("check", "profiles check", "stale")
        files = f"{self.files_checked} file{'s' if self.files_checked != 1 else ''}"
        parts: list[str] = []
        if self.findings:
            by_sev = ", ".join(f"{n} {s}" for s, n in self.counts_by_severity().items() if n)
            where = f" in {files} checked" if counted else ""
            parts.append(f"Found {len(self.findings)} finding(s) ({by_sev}){where}.")
        elif self.proved is not None:
            parts.append(self.proved)
        else:
            parts.append(
                f"All checks passed ({files} checked)." if counted else "All checks passed."
            )
        skipped = self.extra.get("skipped")
        if isinstance(skipped, list) and skipped:
            named = ", ".join(f"{s.get('path')} ({s.get('why')})" for s in skipped[:3])
            more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
            parts.append(f"Skipped {len(skipped)} (no rule could read them): {named}{more}.")
        if self.fixed:
            parts.append(f"Fixed {self.fixed}.")
        if self.fixable:
            parts.append(f"{self.fixable} fixable with `rentcheck check --fix`.")
        if self.findings and not self.failing:
            parts.append(f"None at or above --fail-level={self.fail_level.label}.")
        return " ".join(parts)


# Each output format: the module that renders it (only that one is imported), its function,
# and whether the function takes the colour flag (terminal formats only).
FORMATS: dict[str, tuple[str, str, bool]] = {
    "text": ("text", "render_full", True),
    "concise": ("text", "render_concise", True),
    "json": ("json_format", "render", False),
    "sarif": ("sarif", "render", False),
    "github": ("github", "render", False),
}


def render(report: Report, output_format: str, *, color: bool = False) -> str:
    import importlib

    module, name, takes_color = FORMATS[output_format]
    renderer: Callable[..., str] = getattr(
        importlib.import_module(f"rentcheck.report.{module}"), name
    )
    return renderer(report, color) if takes_color else renderer(report)

"""Human output: ``text`` (finding, help line, summary) and ``concise`` (one line each)."""

from __future__ import annotations

from rentcheck.model import Applicability, Finding, Severity
from rentcheck.report import Report
from rentcheck.sanitise import sanitise

_COLORS = {
    Severity.ERROR: "\033[1;31m",
    Severity.WARNING: "\033[1;33m",
    Severity.NOTE: "\033[1;36m",
}
_BOLD = "\033[1m"
_RESET = "\033[0m"


def finding_line(finding: Finding, color: bool = False) -> str:
    """``where: CODE message``: one finding, as every text output shows it."""
    marker = " [*]" if finding.fix and finding.fix.applicability is Applicability.SAFE else ""
    code = finding.code
    # A box's paths and command lines reach messages: shown escaped, never obeyed.
    where = sanitise(finding.location())
    if color:
        code = f"{_COLORS[finding.severity]}{code}{_RESET}"
        where = f"{_BOLD}{where}{_RESET}"
    return f"{where}: {code}{marker} {sanitise(finding.message)}"


def render_concise(report: Report, color: bool) -> str:
    lines = [finding_line(f, color) for f in report.findings]
    if not report.quiet:
        lines.append(report.summary_text())
    return "".join(line + "\n" for line in lines)


def render_full(report: Report, color: bool) -> str:
    lines: list[str] = []
    for finding in report.findings:
        lines.append(finding_line(finding, color))
        rule = report.rules.get(finding.code)
        if rule is not None:
            lines.append(f"  = {finding.severity.label} [{rule.name}]")
            lines.append(f"  help: {rule.fix}")
        lines.append("")
    if report.quiet:
        return "".join(line + "\n" for line in lines[:-1])  # no blank line after the last
    lines.append(report.summary_text())
    return "\n".join(lines) + "\n"

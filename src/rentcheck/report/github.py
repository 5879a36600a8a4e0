"""``--output-format github``: workflow commands that GitHub Actions turns into annotations."""

from __future__ import annotations

from rentcheck.model import Severity
from rentcheck.report import Report
from rentcheck.sanitise import sanitise

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for finding in report.findings:
        props: list[tuple[str, str]] = []
        if finding.path:
            props.append(("file", finding.path))
        if finding.line:
            props.append(("line", str(finding.line)))
            if finding.end_line:
                props.append(("endLine", str(finding.end_line)))
            if finding.col:
                props.append(("col", str(finding.col)))
            if finding.end_col:
                props.append(("endColumn", str(finding.end_col)))
        rule = report.rules.get(finding.code)
        props.append(("title", f"{finding.code} {rule.name}" if rule else finding.code))
        # Box-controlled text (paths, command lines) must not emit a workflow command or ANSI,
        # nor break an annotation into lines that look like rentcheck's own.
        head = ",".join(f"{k}={escape_property(sanitise(v))}" for k, v in props)
        message = escape_data(sanitise(finding.message))
        lines.append(f"::{_LEVEL[finding.severity]} {head}::{message}")
    lines.append(report.summary_text())
    return "\n".join(lines) + "\n"

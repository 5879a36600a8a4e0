"""``--output-format json``: the machine contract, ``schema: rentcheck/report/v1``.

Stability promise: within v1, fields are only ever added, never renamed, removed or retyped.
"""

from __future__ import annotations

import json

from rentcheck import __version__
from rentcheck.model import Finding
from rentcheck.report import Report
from rentcheck.report.ruledoc import doc_url

# typing.TYPE_CHECKING without importing typing: every recorded run (lint's too) keeps its last
# report as JSON, and a lint run must not pay for imports it does not need.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_ID = "rentcheck/report/v1"


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix = None
    if finding.fix is not None:
        fix = {
            "description": finding.fix.description,
            "applicability": finding.fix.applicability.value,
        }
    return {
        "code": finding.code,
        "severity": finding.severity.label,
        "message": finding.message,
        "path": finding.path,
        "line": finding.line,
        "col": finding.col,
        "end_line": finding.end_line,
        "end_col": finding.end_col,
        "host": finding.host,
        "details": dict(finding.details),
        "fix": fix,
    }


def report_to_dict(report: Report) -> dict[str, Any]:
    names = {code: rule.name for code, rule in report.rules.items()}
    results = []
    for finding in report.findings:
        entry = finding_to_dict(finding)
        entry["name"] = names.get(finding.code)
        entry["doc_url"] = doc_url(finding.code, report.rules)  # None: a plugin's rule
        results.append(entry)
    return {
        "schema": SCHEMA_ID,
        "tool": {"name": "rentcheck", "version": __version__},
        "command": report.command,
        "config_digest": report.config_digest,
        "exit_code": report.exit_code,
        "summary": {
            "files_checked": report.files_checked,
            "findings": len(report.findings),
            "failing": len(report.failing),
            "fail_level": report.fail_level.label,
            "fixed": report.fixed,
            "suppressed": report.suppressed,
            "by_code": report.counts_by_code(),
            "by_severity": report.counts_by_severity(),
        },
        "results": results,
        **report.extra,
    }


def render(report: Report) -> str:
    return json.dumps(report_to_dict(report), indent=2, default=str) + "\n"

"""``--output-format sarif``: SARIF 2.1.0 with what GitHub code scanning requires.

URIs are relative to ``%SRCROOT%`` (the project root), rules come from rule metadata, and every
result carries a physical location (a finding about a host, not a file, points at the
config file so the upload is still accepted).
"""

from __future__ import annotations

import json
from typing import Any

from rentcheck import __version__
from rentcheck.model import Finding, Rule, Severity
from rentcheck.report import Report
from rentcheck.report.ruledoc import doc_url

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/rentcheck/rentcheck"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _rule(rule: Rule, rules: dict[str, Rule]) -> dict[str, Any]:
    help_text = (
        f"{rule.summary}\n\nWhy: {rule.why}\n\nExample (bad):\n{rule.example_bad}\n\n"
        f"Use instead:\n{rule.example_good}\n\nFix: {rule.fix}"
    )
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": help_text, "markdown": help_text.replace("\n", "  \n")},
        "helpUri": doc_url(rule.code, rules) or INFO_URI,
        "defaultConfiguration": {"level": _LEVEL[rule.default_severity]},
        "properties": {"tags": [rule.family], "status": rule.status.value},
    }


def _location(finding: Finding) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": finding.line or 1}
    if finding.col:
        region["startColumn"] = finding.col
    if finding.end_line:
        region["endLine"] = finding.end_line
    if finding.end_col:
        region["endColumn"] = finding.end_col
    uri = (finding.path or "pyproject.toml").lstrip("/")
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "region": region,
        }
    }


def report_to_sarif(report: Report) -> dict[str, Any]:
    codes = sorted({f.code for f in report.findings} | set(report.rules))
    rules = [report.rules[c] for c in codes if c in report.rules]
    index = {rule.code: i for i, rule in enumerate(rules)}
    known = dict(report.rules)
    results = []
    for finding in report.findings:
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": _LEVEL[finding.severity],
            "message": {"text": finding.message},
            "locations": [_location(finding)],
            "partialFingerprints": {
                "rentcheck/v1": f"{finding.code}:{finding.path}:{finding.line}:{finding.message}"
            },
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        # The rule's page on each result too, for consumers that do not follow ruleIndex.
        link = doc_url(finding.code, report.rules)
        properties = {"doc_url": link} if link else {}
        if finding.host:
            properties["host"] = finding.host
        if properties:
            result["properties"] = properties
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rentcheck",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": [_rule(r, known) for r in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "project root"}}},
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def render(report: Report) -> str:
    return json.dumps(report_to_sarif(report), indent=2) + "\n"

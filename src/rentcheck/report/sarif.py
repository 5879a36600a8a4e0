"""``--output-format sarif``: SARIF 2.1.0 with what GitHub code scanning requires.

- A finding has a physical location only where a real file is: the project's files under
  ``%SRCROOT%``, a pulled run's under ``PULLROOT`` (verify and pull), each relative to its own
  base. A finding about a host or a missing file names it as a logical location instead.
- ``partialFingerprints`` stay the same while the finding does: rule, base, path, the flagged
  line's text with its whitespace normalised, and which occurrence of that triple it is; not
  the line number or the message (a count in a message changes, the finding does not).
- A rule's help is markdown with its examples fenced, so ``# .gitattributes`` is code, not a
  heading.
- Messages are box text as often as not: shown through the one escaping path (``sanitise``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rentcheck import __version__
from rentcheck.model import Finding, Rule, Severity
from rentcheck.report import Report
from rentcheck.report.ruledoc import doc_url, example_block
from rentcheck.sanitise import sanitise

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/rentcheck/rentcheck"
FINGERPRINT = "rentcheck/v2"
SRCROOT = "%SRCROOT%"
PULLROOT = "PULLROOT"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _rule(rule: Rule, rules: dict[str, Rule]) -> dict[str, Any]:
    text = (
        f"{rule.summary}\n\nWhy: {rule.why}\n\nExample (bad):\n{rule.example_bad}\n\n"
        f"Use instead:\n{rule.example_good}\n\nFix: {rule.fix}"
    )
    markdown = (
        f"{rule.summary}\n\n**Why:** {rule.why}\n\n"
        f"**Example (bad):**\n\n{example_block(rule, rule.example_bad)}\n\n"
        f"**Use instead:**\n\n{example_block(rule, rule.example_good)}\n\n**Fix:** {rule.fix}"
    )
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": text, "markdown": markdown},
        "helpUri": doc_url(rule.code, rules) or INFO_URI,
        "defaultConfiguration": {"level": _LEVEL[rule.default_severity]},
        "properties": {"tags": [rule.family], "status": rule.status.value},
    }


def _pulled_root(report: Report) -> str | None:
    verify = report.extra.get("verify")
    root = verify.get("root") if isinstance(verify, dict) else None
    return root if isinstance(root, str) else None


def _bases(report: Report) -> tuple[dict[str, str], dict[str, Any]]:
    """Each base id's local directory, and ``originalUriBaseIds`` for the run."""
    project = os.path.abspath(report.root or ".")
    dirs = {SRCROOT: project}
    described: dict[str, Any] = {SRCROOT: {"description": {"text": "project root"}}}
    pulled = _pulled_root(report)
    if pulled is not None:
        pulled = os.path.abspath(pulled)
        dirs[PULLROOT] = pulled
        inside = os.path.relpath(pulled, project)
        if inside != os.curdir and not inside.startswith(os.pardir):
            where: dict[str, Any] = {"uri": Path(inside).as_posix() + "/", "uriBaseId": SRCROOT}
        else:
            where = {"uri": Path(pulled).as_uri() + "/"}
        described[PULLROOT] = {**where, "description": {"text": "the pulled run folder"}}
    return dirs, described


def _base_of(report: Report) -> str:
    # verify's findings (and pull's, which verifies) name files of the pulled folder.
    return PULLROOT if _pulled_root(report) is not None else SRCROOT


def _line_text(directory: str, path: str, line: int | None) -> str:
    """The flagged line with whitespace normalised ('' for a file-level finding or no file)."""
    if not line:
        return ""
    try:
        with open(os.path.join(directory, path), "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == line:
                    return " ".join(raw.decode("utf-8", "replace").split())
    except OSError:
        pass
    return ""


def _location(finding: Finding, base: str, directory: str) -> dict[str, Any] | None:
    if finding.path is None:
        if finding.host is None:
            return None
        host = sanitise(finding.host)
        return {"logicalLocations": [{"name": host, "fullyQualifiedName": f"host:{host}"}]}
    uri = finding.path.lstrip("/")
    if not os.path.isfile(os.path.join(directory, uri)):
        return {"logicalLocations": [{"name": sanitise(uri), "kind": "resource"}]}
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": base}}
    if finding.line:
        region: dict[str, int] = {"startLine": finding.line}
        if finding.col:
            region["startColumn"] = finding.col
        if finding.end_line:
            region["endLine"] = finding.end_line
        if finding.end_col:
            region["endColumn"] = finding.end_col
        physical["region"] = region
    return {"physicalLocation": physical}


def fingerprints(report: Report) -> list[str]:
    """One stable fingerprint per finding, in the report's order."""
    dirs, _ = _bases(report)
    seen: dict[tuple[str, ...], int] = {}
    found = []
    for finding in report.findings:
        base = _base_of(report)
        text = _line_text(dirs[base], finding.path or "", finding.line) if finding.path else ""
        key = (finding.code, base, finding.path or "", finding.host or "", text)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        digest = hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8", "replace"))
        found.append(digest.hexdigest())
    return found


def report_to_sarif(report: Report) -> dict[str, Any]:
    codes = sorted({f.code for f in report.findings} | set(report.rules))
    rules = [report.rules[c] for c in codes if c in report.rules]
    index = {rule.code: i for i, rule in enumerate(rules)}
    known = dict(report.rules)
    dirs, described = _bases(report)
    results = []
    for finding, fingerprint in zip(report.findings, fingerprints(report), strict=True):
        base = _base_of(report)
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": _LEVEL[finding.severity],
            "message": {"text": sanitise(finding.message)},
            "partialFingerprints": {FINGERPRINT: fingerprint},
        }
        location = _location(finding, base, dirs[base])
        if location is not None:
            result["locations"] = [location]
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
                "originalUriBaseIds": described,
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def render(report: Report) -> str:
    return json.dumps(report_to_sarif(report), indent=2) + "\n"

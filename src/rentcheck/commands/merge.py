"""``rentcheck merge REPORT...``: fold the JSON reports of many runs (one per host, task or
node) into one report and one host x code table.

Each REPORT is a ``rentcheck ... --output-format json`` document (schema rentcheck/report/v1),
for instance one per Slurm array task or Kubernetes Indexed Job pod. A report of
``rentcheck audit --hosts`` contributes one row per host. Reports come from other machines:
they are read as JSON only, checked field by field, and every text is sanitised before a
terminal sees it. Exit 0 when every report passed, 1 when one had failing findings, 2 when one
could not check its host (or a report cannot be read).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rentcheck.errors import FormatError, UsageError
from rentcheck.output import emit

__all__ = ["add_parsers", "merge_reports", "run_merge"]

SCHEMA = "rentcheck/report/v1"


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    merge = sub.add_parser(
        "merge",
        parents=[common],
        help="fold JSON reports of many runs (hosts, array tasks) into one report and table",
        description="Exit 0 all passed, 1 a report had failing findings, 2 a report could not "
        "check its host or cannot be read.",
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT", help="JSON report files")
    merge.set_defaults(handler=run_merge)


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(
            f"{path}: not a JSON report ({exc})",
            hint="write each report with `rentcheck audit ... --output-format json -o FILE`",
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise FormatError(
            f"{path}: not a rentcheck report (schema is not {SCHEMA})",
            hint="merge reads the output of --output-format json",
        )
    if not isinstance(doc.get("results"), list):
        raise FormatError(f"{path}: its results are not a list", hint="regenerate the report")
    return doc


def _exit_code(value: Any) -> int:
    return value if isinstance(value, int) and value in (0, 1, 2) else 2


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _finding(entry: Any, source: str, host: str | None) -> dict[str, Any] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("code"), str):
        return None
    found = {k: entry.get(k) for k in ("code", "name", "severity", "message", "path", "line")}
    found["host"] = _text(entry.get("host")) or host
    found["source"] = source
    return found


def merge_reports(paths: list[str]) -> dict[str, Any]:
    """One report from many: every finding (with its host and source file) and one row per
    host; the exit code is the worst of theirs."""
    results: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for path in paths:
        doc = _load(path)
        host = _text(doc.get("host"))
        found = [f for f in (_finding(e, path, host) for e in doc["results"]) if f is not None]
        results.extend(found)
        fleet = doc.get("hosts")
        if isinstance(fleet, list) and fleet:  # a fleet report: one row per host
            for entry in fleet:
                if not isinstance(entry, dict):
                    continue
                name = _text(entry.get("host")) or "?"
                counts = _counts(f for f in found if f["host"] == name)
                error = _text(entry.get("error")) or ""
                rows.append(_row(name, _exit_code(entry.get("exit_code")), counts, path, error))
        else:
            name = host or _text(doc.get("command")) or path
            rows.append(_row(name, _exit_code(doc.get("exit_code")), _counts(found), path, ""))
    by_code = _counts(results)
    return {
        "schema": SCHEMA,
        "command": "merge",
        "exit_code": max((r["exit_code"] for r in rows), default=0),
        "summary": {"reports": len(paths), "hosts": len(rows), "findings": len(results),
                    "by_code": by_code},
        "hosts": rows,
        "results": results,
    }  # fmt: skip


def _counts(findings: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding["code"]] = counts.get(finding["code"], 0) + 1
    return dict(sorted(counts.items()))


def _row(host: str, code: int, counts: dict[str, int], source: str, error: str) -> dict[str, Any]:
    return {"host": host, "exit_code": code, "counts": counts, "source": source, "error": error}


def run_merge(args: argparse.Namespace) -> int:
    from rentcheck.box.fleet_table import HostRow, fleet_table
    from rentcheck.sanitise import sanitise

    merged = merge_reports(args.reports)
    if args.output_format == "json":
        emit(json.dumps(merged, indent=2) + "\n", args.output_file)
    else:
        rows = [
            HostRow(r["host"], r["exit_code"], r["counts"], (r["error"].splitlines() or [""])[0])
            for r in merged["hosts"]
        ]
        lines = fleet_table(rows)
        for f in merged["results"]:
            where = f["host"] or f["path"] or f["source"]
            lines.append(sanitise(f"{where}: {f['code']} {f['message'] or ''}"))
        emit("\n".join(lines) + "\n", args.output_file)
    return 0 if args.exit_zero else int(merged["exit_code"])

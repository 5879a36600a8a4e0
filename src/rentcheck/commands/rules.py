"""``rentcheck rule CODE`` and ``rentcheck rules``: documentation generated from rule metadata."""

from __future__ import annotations

import argparse
import difflib
import json
import textwrap
from typing import Any

from rentcheck.config import suggest_code
from rentcheck.errors import UsageError
from rentcheck.model import Rule
from rentcheck.output import emit
from rentcheck.registry import all_rules, load_rule_set


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    one = sub.add_parser("rule", parents=[common], help="explain one rule: what, why, example, fix")
    one.add_argument("code", help="rule code, e.g. RC101, or its name, e.g. crlf-line-endings")
    one.add_argument(
        "--format",
        dest="doc_format",
        choices=("text", "json", "markdown"),
        default=None,
        help="text (default), json, or markdown: the rule's page as docs/rules/ has it",
    )
    one.set_defaults(handler=run_rule)
    many = sub.add_parser("rules", parents=[common], help="list every rule")
    many.set_defaults(handler=run_rules)


def rule_to_dict(rule: Rule) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "family": rule.family,
        "summary": rule.summary,
        "why": rule.why,
        "example_bad": rule.example_bad,
        "example_good": rule.example_good,
        "fix": rule.fix,
        "fix_applicability": rule.fix_applicability.value,
        "default_severity": rule.default_severity.label,
        "status": rule.status.value,
    }


def explain(rule: Rule) -> str:
    def block(text: str) -> str:
        return textwrap.indent(text, "    ")

    def para(text: str) -> str:
        return textwrap.fill(text, width=96, initial_indent="    ", subsequent_indent="    ")

    return (
        f"{rule.code} {rule.name}  ({rule.family}; {rule.status.value}; default severity "
        f"{rule.default_severity.label}; fix: {rule.fix_applicability.value})\n\n"
        f"What it does\n{para(rule.summary)}\n\n"
        f"Why is this bad?\n{para(rule.why)}\n\n"
        f"Example\n{block(rule.example_bad)}\n\n"
        f"Use instead\n{block(rule.example_good)}\n\n"
        f"Fix\n{para(rule.fix)}\n"
    )


def run_rule(args: argparse.Namespace) -> int:
    rules = all_rules()
    wanted = args.code.strip()
    rule = rules.get(wanted.upper()) or next((r for r in rules.values() if r.name == wanted), None)
    if rule is None:
        by_name = difflib.get_close_matches(wanted, [r.name for r in rules.values()], n=1)
        hint = f"did you mean {by_name[0]}?" if by_name else suggest_code(wanted, rules)
        raise UsageError(f"no rule {wanted!r}", hint=hint)
    shape = args.doc_format or ("json" if args.output_format == "json" else "text")
    if shape == "json":
        from rentcheck.report.ruledoc import doc_url

        described = rule_to_dict(rule) | {"doc_url": doc_url(rule.code, rules)}
        emit(json.dumps(described, indent=2) + "\n", args.output_file)
    elif shape == "markdown":
        from rentcheck.report.ruledoc import rule_markdown

        emit(rule_markdown(rule), args.output_file)
    else:
        emit(explain(rule), args.output_file)
    return 0


def run_rules(args: argparse.Namespace) -> int:
    rule_set = load_rule_set()
    rules = list(rule_set.rules.values())
    origin = rule_set.origins
    if args.output_format == "json":
        listed = [rule_to_dict(r) | {"origin": origin.get(r.code, "rentcheck")} for r in rules]
        emit(json.dumps(listed, indent=2) + "\n", args.output_file)
        return 0
    width = max(len(r.name) for r in rules)
    lines = [f"{'code':<7} {'name':<{width}}  {'severity':<8} {'fix':<6} {'status':<7} summary"]
    for r in rules:
        where = origin.get(r.code, "rentcheck")
        lines.append(
            f"{r.code:<7} {r.name:<{width}}  {r.default_severity.label:<8} "
            f"{r.fix_applicability.value:<6} {r.status.value:<7} {r.summary}"
            + ("" if where == "rentcheck" else f"  [{where}]")
        )
    lines.extend(f"skipped: {line}" for line in rule_set.broken)
    emit("\n".join(lines) + "\n", args.output_file)
    return 0

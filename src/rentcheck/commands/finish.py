"""The one emit path of every gate command: judge, record in the ledger, render, exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from rentcheck.gates.judge import GateResult, Verdict
from rentcheck.gates.run import GateRun
from rentcheck.output import emit, use_color
from rentcheck.report import Report, render

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.model import Rule

__all__ = ["add_force_options", "finish", "force_reason", "show"]


def finish(
    args: argparse.Namespace,
    run: GateRun,
    result: GateResult,
    *,
    command: str,
    rules: Mapping[str, Rule],
    record: bool = True,
    validate: bool = True,
) -> int:
    """Judge ``result``, append it to the ledger, print it as asked; the exit code."""
    verdict = run.conclude(
        result, exit_zero=args.exit_zero, rules=rules if validate else None, record=record
    )
    keep = record and not result.partial
    return show(args, run, result, verdict, command=command, rules=rules, keep_last=keep)


def show(
    args: argparse.Namespace,
    run: GateRun,
    result: GateResult,
    verdict: Verdict,
    *,
    command: str,
    rules: Mapping[str, Rule],
    keep_last: bool = True,
) -> int:
    """Print a judged result in the chosen format (``-o FILE`` atomically); the exit code.
    ``keep_last``: also keep it as the gate's last JSON report, for ``rentcheck report``."""
    config = run.config
    gate = run.gate
    payload = result.extras.get(gate.name)
    if isinstance(payload, dict) and "passed" in payload:
        payload["passed"] = verdict.passed  # the gate's own block says the one verdict
    report = Report(
        command=command,
        findings=list(verdict.findings),
        rules=rules,
        config_digest=config.digest(),
        fail_level=verdict.fail_level,
        exit_zero=args.exit_zero,
        files_checked=result.files_checked,
        fixed=result.fixed,
        suppressed=result.suppressed,
        judged_failing=verdict.failing,
        proved=result.proved,
        root=config.root,
        quiet=getattr(args, "quiet", False),
        # The gate's extras under one key ("gate"); v1 consumers also find them at the top
        # level, where they were before the gate table (fields are only ever added).
        extra={
            **result.extras,
            "gate": {
                "name": gate.name,
                "phase": gate.phase,
                "passed": verdict.passed,
                "forced": run.forced(),
                "extras": result.extras,
            },
        },
    )
    if keep_last:
        from rentcheck.report.lastrun import save_last_report

        save_last_report(run.root, gate.name, report)
    color = use_color(args.color, sys.stdout.isatty() and not args.output_file)
    text = render(report, config.output_format, color=color)
    from rentcheck.gates.judge import headline_of
    from rentcheck.sanitise import sanitise

    # Headlines quote runs and boxes (log lines, paths): each element is one line of ours, so a
    # line break inside one came from the box and is shown escaped, never obeyed. The gate's
    # own words come from the one verdict (headline_of).
    headline = "".join(sanitise(line) + "\n" for line in headline_of(result, verdict))
    if report.quiet:
        headline = ""
    if headline and config.output_format in ("text", "concise"):
        text = headline + "\n" + text
    elif headline:
        sys.stderr.write(headline)
    for notice in config.notices:
        sys.stderr.write(f"rentcheck: warning: {notice}\n")
    emit(text, args.output_file)
    return verdict.exit_code


def add_force_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("order")
    group.add_argument(
        "--force",
        action="store_true",
        help="pass although a prerequisite gate is missing or stale (needs --reason; recorded)",
    )
    group.add_argument("--reason", metavar="TEXT", help="why --force: kept in the ledger")


def force_reason(args: argparse.Namespace) -> str | None:
    """The recorded reason of ``--force`` (a UsageError without one)."""
    from rentcheck.errors import UsageError

    if not getattr(args, "force", False):
        if getattr(args, "reason", None):
            raise UsageError("--reason is only for --force", hint="add --force, or drop --reason")
        return None
    reason = (args.reason or "").strip()
    if not reason:
        raise UsageError("--force needs --reason TEXT", hint="say why; the ledger keeps it")
    return reason

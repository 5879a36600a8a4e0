"""``rentcheck report``: the project's lifecycle as one HTML page and a CI-summary markdown."""

from __future__ import annotations

import argparse
import sys

from rentcheck.config import load_config
from rentcheck.output import emit


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    report = sub.add_parser(
        "report",
        parents=[common],
        help="the lifecycle so far (ledger + each gate's last report) as HTML or markdown",
        description="Read the project's ledger and the last JSON report of each gate "
        "(.rentcheck/last/) and write one self-contained HTML page (--html) and/or markdown "
        "for a CI job summary (--markdown; under 1 MiB). Without either, the markdown goes to "
        "stdout. Exit 0 when written, 2 on a usage error.",
    )
    report.add_argument("--html", metavar="FILE", help="write the HTML page here (atomically)")
    report.add_argument(
        "--markdown", metavar="FILE", help="write the markdown here (atomically; - for stdout)"
    )
    report.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="JSON",
        help="a gate's --output-format json report to show instead of its kept one (repeatable)",
    )
    report.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    from rentcheck.errors import UsageError
    from rentcheck.report.lifecycle import gather

    if args.output_format is not None:
        # The lifecycle page is HTML or markdown; printing markdown for `sarif` would upload
        # nothing a code scanner can read and say nothing about it.
        raise UsageError(
            f"report writes HTML and markdown, not {args.output_format}",
            hint="--html FILE and/or --markdown FILE; for SARIF or JSON run the gate itself, "
            f"e.g. rentcheck check --output-format {args.output_format}",
        )
    if args.output_file is not None:  # -o is "write results here" in every command
        if args.markdown is not None:
            raise UsageError("-o and --markdown both name the markdown file", hint="keep one")
        args.markdown = args.output_file
    config = load_config(".", explicit=args.config, isolated=args.isolated)
    life = gather(config.root, args.input)
    for problem in life.problems:
        from rentcheck.sanitise import sanitise

        sys.stderr.write(f"rentcheck: warning: {sanitise(problem)}\n")
    if args.html:
        from rentcheck.report.html import render_html

        emit(render_html(life), args.html)
        if not args.quiet:
            sys.stderr.write(f"rentcheck: wrote the HTML report to {args.html}\n")
    if args.markdown or not args.html:
        from rentcheck.report.markdown import render_markdown

        target = None if args.markdown in (None, "-") else args.markdown
        emit(render_markdown(life), target)
        if target and not args.quiet:
            sys.stderr.write(f"rentcheck: wrote the markdown report to {target}\n")
    return 0

"""``rentcheck check``: the static pre-rent lint gate."""

from __future__ import annotations

import argparse
import os
import sys

from rentcheck.config import load_config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    p = sub.add_parser(
        "check",
        parents=[common],
        help="lint the repository (shell, Python, config hygiene) before renting",
        description="Run the static pre-rent checks. Exit 0 clean, 1 findings, 2 error.",
    )
    p.add_argument("paths", nargs="*", help="files or directories (default: the project root)")
    p.add_argument("--fix", action="store_true", help="apply safe fixes (atomic, keeps file modes)")
    p.add_argument(
        "--diff", action="store_true", help="show what --fix would change; write nothing"
    )
    for flag in ("select", "extend-select", "ignore", "exclude", "extend-exclude"):
        p.add_argument(
            f"--{flag}",
            metavar="CODES" if "select" in flag or flag == "ignore" else "GLOBS",
            help=f"comma-separated; overrides the config's `{flag}`",
        )
    p.add_argument("--preview", action="store_true", default=None, help="enable preview rules")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write .rentcheck/cache (findings keyed by file content)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    overrides = {
        "select": args.select,
        "extend-select": args.extend_select,
        "ignore": args.ignore,
        "exclude": args.exclude,
        "extend-exclude": args.extend_exclude,
        "fail-level": args.fail_level,
        "preview": args.preview,
        "output-format": args.output_format,
    }
    start = args.paths[0] if args.paths else "."
    config = load_config(start, explicit=args.config, isolated=args.isolated, overrides=overrides)
    linter = Linter(config, load_rule_set(with_gates=False))
    use_cache = not args.no_cache and not os.environ.get("RENTCHECK_NO_CACHE")
    result = linter.run(args.paths, fix=args.fix, diff=args.diff, cache=use_cache)
    if args.diff:
        sys.stdout.write("".join(result.diffs))
        return 1 if result.diffs else 0
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    if not result.checked and not result.skipped:
        excluded = _excluded(args.paths, config.root, config.excludes)
        if excluded:
            shown = ", ".join(excluded[:5]) + (", ..." if len(excluded) > 5 else "")
            sys.stderr.write(
                f"rentcheck: warning: no files to check: {shown} named but excluded by "
                "`exclude`/`extend-exclude` (pre-commit passes excluded files too; the config "
                "decides)\n"
            )
        else:
            sys.stderr.write("rentcheck: warning: no files to check (nothing matched the paths)\n")
    extras = {}
    if result.skipped:
        extras["skipped"] = [{"path": path, "why": why} for path, why in result.skipped]
    gate = GateResult(
        "lint",
        result.findings,
        extras=extras,
        files_checked=len(result.checked),
        fixed=len(result.fixed),
        suppressed=result.suppressed,
        # Named files (pre-commit passes the staged ones) prove nothing about the project.
        partial=_partial(args.paths, config.root),
    )
    run_ = GateRun(config, "lint")
    return finish(args, run_, gate, command="check", rules=linter.known, validate=False)


def _partial(paths: list[str], root: str) -> bool:
    return any(os.path.abspath(p) != os.path.abspath(root) for p in paths)


def _excluded(paths: list[str], root: str, excludes: tuple[str, ...]) -> list[str]:
    """The named files an exclude pattern drops (said as such, not as "nothing matched")."""
    from rentcheck.pathmatch import matcher

    hit = matcher(excludes)
    base = os.path.abspath(root)
    found = []
    for path in paths:
        rel = os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")
        if os.path.isfile(path) and not rel.startswith("../") and hit(rel):
            found.append(path)
    return found

"""``rentcheck profiles [list|check|show]``: the platform profiles, listed, validated, explained."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from rentcheck.config import Config, load_config
from rentcheck.errors import UsageError
from rentcheck.output import emit

ACTIONS = ("list", "check", "show")
SCHEMA_ID = "rentcheck/profiles/v1"


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    p = sub.add_parser(
        "profiles",
        parents=[common],
        help="list platform profiles; `check` validates them, `show NAME` explains one",
        description=(
            "`rentcheck profiles` lists the platform profiles in use (your profiles.paths "
            "first, then the shipped ones). `rentcheck profiles check [PATHS]` validates "
            "profile files (frontmatter schema, the eight sections, stamps present and "
            "well-formed; never the calendar). `rentcheck profiles show NAME` prints the "
            "survival matrix and what the meter-stop action destroys. Exit 0 clean, "
            "1 findings (or an invalid profile), 2 error."
        ),
    )
    p.add_argument("action", nargs="?", choices=ACTIONS, default="list", help="default: list")
    p.add_argument(
        "targets", nargs="*", metavar="PATH|NAME", help="check: files or directories; show: NAME"
    )
    p.set_defaults(handler=run)


def _config(args: argparse.Namespace, start: str = ".") -> Config:
    overrides = {"output-format": args.output_format, "fail-level": args.fail_level}
    return load_config(start, explicit=args.config, isolated=args.isolated, overrides=overrides)


def run(args: argparse.Namespace) -> int:
    if args.action == "check":
        return run_check(args)
    if args.action == "show":
        if len(args.targets) != 1:
            raise UsageError(
                "`rentcheck profiles show` takes exactly one profile name",
                hint="e.g. rentcheck profiles show runpod",
            )
        return run_show(args, args.targets[0])
    if args.targets:
        raise UsageError("`rentcheck profiles list` takes no arguments", hint="drop them")
    return run_list(args)


def run_list(args: argparse.Namespace) -> int:
    from rentcheck.profiles.document import read_markdown
    from rentcheck.profiles.gather import display_path
    from rentcheck.profiles.load import available_profiles, profile_from_doc

    config = _config(args)
    rows: list[dict[str, Any]] = []
    for name, entry in available_profiles(config).items():
        shown = display_path(entry.path, config.root)
        profile, problems = profile_from_doc(read_markdown(entry.path, shown), entry.path)
        rows.append(
            {
                "name": name,
                "path": shown,
                "shipped": entry.shipped,
                "replaces": display_path(entry.shadows, config.root) if entry.shadows else None,
                "valid": profile is not None,
                "problems": len(problems),
                "profile": profile.to_dict() if profile is not None else None,
            }
        )
    code = 0 if all(row["valid"] for row in rows) else 1
    if config.output_format == "json":
        emit(json.dumps({"schema": SCHEMA_ID, "profiles": rows}, indent=2) + "\n", args.output_file)
        return code
    from rentcheck.profiles.show import table

    lines = [["platform", "kind", "meter stop", "undo?", "durable tier", "spot grace", "from"]]
    for row in rows:
        data = row["profile"]
        origin = "shipped" if row["shipped"] else row["path"]
        if data is None:
            problem = (
                f"INVALID ({row['problems']} problems: rentcheck profiles check {row['path']})"
            )
            lines.append([row["name"], "-", problem, "", "", "", origin])
            continue
        irreversible = data["meter_stop"]["irreversible"]
        grace = data["spot"]["grace_seconds"]
        lines.append(
            [
                row["name"],
                data["kind"],
                data["meter_stop"]["action"],
                "?" if irreversible is None else ("no" if irreversible else "yes"),
                data["durable_tier"] or "(none: pull first)",
                "-" if grace is None else f"{grace} s",
                origin,
            ]
        )
    emit(table(lines) + "\n", args.output_file)
    return code


def run_show(args: argparse.Namespace, name: str) -> int:
    from rentcheck.profiles.gather import display_path
    from rentcheck.profiles.load import load_profile
    from rentcheck.profiles.show import meter_stop_warning, render_profile, survival_rows

    config = _config(args)
    profile = load_profile(name, config)
    origin = "shipped" if profile.shipped else display_path(profile.path, config.root)
    if config.output_format == "json":
        header, *rows = survival_rows(profile)
        document = {
            "schema": SCHEMA_ID,
            "path": display_path(profile.path, config.root),
            "shipped": profile.shipped,
            "profile": profile.to_dict(),
            "meter_stop_warning": meter_stop_warning(profile),
            "survival_matrix": [dict(zip(header, row, strict=True)) for row in rows],
        }
        emit(json.dumps(document, indent=2, ensure_ascii=False) + "\n", args.output_file)
    else:
        emit(render_profile(profile, origin), args.output_file)
    return 0


def run_check(args: argparse.Namespace) -> int:
    from rentcheck.profiles.check import check_profile_file
    from rentcheck.profiles.gather import profile_targets
    from rentcheck.registry import all_rules

    start = args.targets[0] if args.targets else "."
    config = _config(args, start)
    targets = profile_targets(args.targets, config)
    only_readmes = bool(args.targets) and all(os.path.isfile(t) for t in args.targets)
    if not targets and not only_readmes:  # a README passed by pre-commit is simply no profile
        raise UsageError(
            "no profile files to check", hint="pass profile files or directories holding *.md"
        )
    findings = []
    checked = []
    for abspath, shown, shipped in targets:
        result = check_profile_file(abspath, shown, shipped=shipped)
        findings += result.findings
        checked.append(
            {
                "path": shown,
                "platform": result.profile.platform if result.profile else None,
                "valid": result.profile is not None,
            }
        )
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    gate = GateResult(
        "stale",
        findings,
        extras={"profiles": checked},
        files_checked=len(targets),
        # Named files (pre-commit passes the staged ones) prove nothing about the project's
        # profiles: as for `rentcheck check FILE`, nothing goes to the ledger.
        partial=bool(args.targets),
    )
    return finish(args, GateRun(config, "stale"), gate, command="profiles check", rules=all_rules())

"""``rentcheck config``: print the effective settings and where they came from."""

from __future__ import annotations

import argparse
import json

from rentcheck.config import load_config, selected_rules
from rentcheck.output import emit
from rentcheck.registry import all_rules


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    p = sub.add_parser("config", parents=[common], help="print the effective configuration")
    p.add_argument("path", nargs="?", default=".", help="where to start looking for config")
    p.set_defaults(handler=run)


def _toml_value(value: object) -> str:
    return json.dumps(value)


def run(args: argparse.Namespace) -> int:
    overrides = {"fail-level": args.fail_level}
    config = load_config(
        args.path, explicit=args.config, isolated=args.isolated, overrides=overrides
    )
    enabled = sorted(selected_rules(config, all_rules()))
    if args.output_format == "json":
        doc = {
            "source": config.source,
            "root": config.root,
            "digest": config.digest(),
            "settings": config.to_dict(),
            "enabled_rules": enabled,
        }
        emit(json.dumps(doc, indent=2) + "\n", args.output_file)
        return 0
    lines = [
        f"# source: {config.source or '(defaults; no config file found)'}",
        f"# root: {config.root}",
        f"# digest: {config.digest()}",
        f"# enabled rules: {', '.join(enabled)}",
        "[tool.rentcheck]",
    ]
    for key, value in config.to_dict().items():
        if key == "per-file-ignores":
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    lines.append("")
    lines.append("[tool.rentcheck.per-file-ignores]")
    for glob, codes in config.to_dict()["per-file-ignores"].items():
        lines.append(f"{json.dumps(glob)} = {_toml_value(codes)}")
    emit("\n".join(lines) + "\n", args.output_file)
    return 0

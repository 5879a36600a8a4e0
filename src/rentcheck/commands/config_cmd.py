"""``rentcheck config``: print the effective settings and where they came from."""

from __future__ import annotations

import argparse
import json
import sys

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
    return json.dumps(value, default=str, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    overrides = {"fail-level": args.fail_level}
    config = load_config(
        args.path, explicit=args.config, isolated=args.isolated, overrides=overrides
    )
    from rentcheck.gates.effective import effective_sections

    enabled = sorted(selected_rules(config, all_rules()))
    sections = effective_sections(config)
    for notice in config.notices:
        sys.stderr.write(f"rentcheck: warning: {notice}\n")
    if args.output_format == "json":
        doc = {
            "source": config.source,
            "root": config.root,
            "digest": config.digest(),
            "settings": config.to_dict(),
            "enabled_rules": enabled,
            "sections": sections,
            "notices": list(config.notices),
        }
        emit(json.dumps(doc, indent=2, default=str) + "\n", args.output_file)
        return 0
    lines = [
        f"# source: {config.source or '(defaults; no config file found)'}",
        f"# root: {config.root}",
        f"# digest: {config.digest()}",
        f"# enabled rules: {', '.join(enabled)}",
        *(f"# warning: {notice}" for notice in config.notices),
        "[tool.rentcheck]  # lint's selection; each gate's own is in its table below",
    ]
    core = config.to_dict()
    for key, value in core.items():
        if key == "per-file-ignores" or key in sections or key == "python":
            continue
        origin = config.origins.get(key, "default")
        lines.append(f"{key} = {_toml_value(value)}  # {origin}")
    lines.append("")
    lines.append("[tool.rentcheck.per-file-ignores]")
    for glob, codes in config.to_dict()["per-file-ignores"].items():
        lines.append(f"{json.dumps(glob)} = {_toml_value(codes)}")
    for name, section in sections.items():
        lines.append("")
        lines.append(f"[tool.rentcheck.{name}]  # gate: {', '.join(section['gates'])}")
        if section["problem"]:
            lines.append(f"# not usable as it is: {section['problem']}")
        for key, entry in sorted(section["values"].items()):
            value = _toml_value(entry["value"])
            lines.append(f"{key} = {value}  # {entry['origin']}")
    emit("\n".join(lines) + "\n", args.output_file)
    return 0

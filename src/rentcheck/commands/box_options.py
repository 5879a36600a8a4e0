"""The flags and helpers every command that reaches a box shares (launch, launch-check,
watch): the host and its connection, the project's config, the box itself."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rentcheck.config import Config, load_config

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = ["config_of", "connection_options", "open_for"]


def connection_options(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    # launch checks its prerequisites before it asks for a host: `rentcheck gate launch`
    # says what is missing first.
    p.add_argument("--host", required=required, help="an ssh alias (as in ssh_config), or local")
    p.add_argument("--session", help="the job's name on the box (default: train)")
    g = p.add_argument_group("connection")
    g.add_argument("--ssh-config", metavar="FILE", help="ssh_config to resolve aliases with")
    g.add_argument("--connect-timeout", type=float, metavar="S", help="TCP and auth timeout (10)")


def config_of(args: argparse.Namespace) -> Config:
    overrides = {"fail-level": args.fail_level, "output-format": args.output_format}
    return load_config(".", explicit=args.config, isolated=args.isolated, overrides=overrides)


def open_for(args: argparse.Namespace | None, host: str) -> Box:
    from rentcheck.box.transport import open_box

    return open_box(
        host,
        ssh_config=getattr(args, "ssh_config", None),
        connect_timeout=getattr(args, "connect_timeout", None),
    )

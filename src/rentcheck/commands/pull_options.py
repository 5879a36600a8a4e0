"""The flags and helpers the pull-phase commands share (manifest, pull, verify, teardown):
the box connection, the project's config (never one found in a pulled folder), and verify
with the command line's flags."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rentcheck.config import Config, load_config

__all__ = ["MANIFEST", "config_for", "connection_options", "verify_and_mark"]

MANIFEST = "PULL_MANIFEST.json"


def connection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("connection")
    g.add_argument("--ssh-config", metavar="FILE", help="ssh_config to resolve aliases with")
    g.add_argument("--connect-timeout", type=float, metavar="S", help="TCP and auth timeout (10)")
    g.add_argument(
        "--timeout", type=float, default=900.0, metavar="S",
        help="server-side limit of one roster step on the box (900)",
    )  # fmt: skip


def config_for(args: argparse.Namespace, untrusted: tuple[str, ...] = ()) -> Config:
    """The project's settings; never any found in ``untrusted`` (the pulled folder)."""
    overrides = {"fail-level": args.fail_level, "output-format": args.output_format}
    return load_config(
        ".",
        explicit=args.config,
        isolated=args.isolated,
        overrides=overrides,
        untrusted=untrusted,
    )


def verify_and_mark(
    args: argparse.Namespace,
    config: Config,
    root: str,
    *,
    manifest: str | None = None,
    expected_run_id: str | None = None,
    marker_extra: dict[str, Any] | None = None,
    show_progress: bool = True,
) -> tuple[Any, Any, Any]:
    """The verify gate (``rentcheck.pull.verify_gate``) with this command line's flags."""
    from rentcheck.output import use_color
    from rentcheck.pull.progress import TerminalProgress
    from rentcheck.pull.settings import verify_settings
    from rentcheck.pull.verify_gate import verify_gate

    settings = verify_settings(config, deep=args.deep, jobs=args.jobs)
    if args.allow_global:
        settings = verify_settings(
            config,
            deep=args.deep,
            jobs=args.jobs,
            allow_globals=(*settings.allow_globals, *args.allow_global),
        )
    progress = None
    if show_progress and sys.stderr.isatty():
        progress = TerminalProgress(sys.stderr, color=use_color(args.color, True))
    run, gate, verdict = verify_gate(
        config,
        settings,
        root,
        manifest=manifest,
        expected_run_id=expected_run_id,
        marker_extra=marker_extra,
        progress=progress,
        exit_zero=args.exit_zero,
    )
    if progress is not None:
        progress.finish()
    if not verdict.passed:
        sys.stderr.write("rentcheck: verification failed: no PULL_VERIFIED.json written\n")
    return run, gate, verdict

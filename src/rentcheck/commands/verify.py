"""``rentcheck verify``: the pulled folder against its manifest, bit for bit; checkpoints safe
to load and finite. Exit 0 verified (PULL_VERIFIED.json written), 1 findings, 2 unusable input.
"""

from __future__ import annotations

import argparse

from rentcheck.commands.pull_options import MANIFEST as _MANIFEST
from rentcheck.commands.pull_options import config_for, verify_and_mark

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    verify = sub.add_parser(
        "verify",
        parents=[common],
        help="prove a pulled directory matches its manifest: digests, structure, safety, NaN/Inf",
        description="Read every pulled file once: roster and SHA-256 against the manifest, "
        "checkpoint structure, pickle safety (never executed), NaN/Inf. Success writes "
        "LOCAL_ROOT/PULL_VERIFIED.json; a failure writes nothing and removes nothing.",
    )
    verify.add_argument("root", metavar="LOCAL_ROOT", help="the directory the pull wrote to")
    verify.add_argument("--manifest", metavar="FILE", help=f"default: LOCAL_ROOT/{_MANIFEST}")
    verify.add_argument("--expect-run-id", metavar="ID", help="fail unless the manifest is for ID")
    verify.add_argument(
        "--deep",
        action="store_true",
        default=None,
        help="also load each checkpoint (torch weights_only=True, mmap / safetensors)",
    )
    verify.add_argument("--jobs", type=int, metavar="N", help="files read at once")
    verify.add_argument(
        "--allow-global",
        action="append",
        metavar="MODULE.NAME",
        help="accept this pickle global too (repeatable; adds to verify.allow_globals)",
    )
    verify.set_defaults(handler=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import show
    from rentcheck.pull.rules import RULES_BY_CODE

    config = config_for(args, untrusted=(args.root,))
    run, gate, verdict = verify_and_mark(
        args, config, args.root, manifest=args.manifest, expected_run_id=args.expect_run_id
    )
    return show(args, run, gate, verdict, command="verify", rules=RULES_BY_CODE)

"""``rentcheck manifest build|check``: the exact roster of a run's results.

``manifest build`` writes the manifest even when it reports leftovers (RC510, an error, exactly
as ``verify`` will report them): exit 1 then means "written, but verify will fail until the
unfinished writes are dealt with and the manifest rebuilt".
"""

from __future__ import annotations

import argparse
from typing import Any

from rentcheck.commands.pull_options import MANIFEST as _MANIFEST
from rentcheck.commands.pull_options import config_for, connection_options
from rentcheck.config import Config

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    manifest = sub.add_parser(
        "manifest",
        help="build or check PULL_MANIFEST.json, the exact roster of a run's results",
        description="Build the manifest on the box (stdlib only) or check one's shape.",
    )
    actions = manifest.add_subparsers(dest="manifest_command", metavar="ACTION")
    build = actions.add_parser(
        "build",
        parents=[common],
        help="hash every file under ROOT into ROOT/PULL_MANIFEST.json (run it on the box)",
        description="Write PULL_MANIFEST.json atomically. Exit 0 written, 1 written with "
        "leftovers (RC510), 2 refused (symlink leaving ROOT, device file, non-UTF-8 name).",
    )
    build.add_argument("root", metavar="ROOT", help="the run's result directory")
    build.add_argument(
        "--host",
        help="build it on this box (an ssh alias, or local) over one SSH exec: the stdlib "
        "builder goes on stdin, ROOT/PULL_MANIFEST.json is written there",
    )
    connection_options(build)
    build.add_argument(
        # `-o` is the report file here too, as in every command; the manifest is --manifest
        # (as in verify). One meaning per option name: --output is no longer a second one.
        "--manifest",
        dest="manifest_file",
        metavar="FILE",
        help=f"where to write the manifest (default: ROOT/{_MANIFEST})",
    )
    build.add_argument("--run-id", metavar="ID", help="default: <UTC time>-<random>")
    build.add_argument("--jobs", type=int, metavar="N", help="files hashed at once")
    build.add_argument("--no-blake3", action="store_true", help="SHA-256 only")
    build.set_defaults(handler=run_build)

    check = actions.add_parser(
        "check",
        parents=[common],
        help="validate a manifest's shape (schema, paths, sizes, digests)",
    )
    check.add_argument("file", metavar="FILE")
    check.set_defaults(handler=run_check)
    manifest.set_defaults(handler=lambda _args: _help(manifest))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_build(args: argparse.Namespace) -> int:
    from rentcheck.pull.manifest import build_manifest_file

    if args.host is not None:
        return _build_on_box(args, config_for(args))
    # Run inside the run folder or not, the project (its config, its ledger) is never there.
    config = config_for(args, untrusted=(args.root,))
    path, doc = build_manifest_file(
        args.root,
        args.manifest_file,
        run_id=args.run_id,
        jobs=args.jobs,
        with_blake3=not args.no_blake3,
    )
    from rentcheck.pull.verify_gate import sha256_of

    digest = "sha256:" + sha256_of(str(path))
    return _report_build(args, config, str(path), dict(doc), digest)


def _build_on_box(args: argparse.Namespace, config: Config) -> int:
    """``manifest build --host H ROOT``: the builder runs on the box over one exec and writes
    ROOT/PULL_MANIFEST.json there; the roster's bytes come back for the summary."""
    import posixpath

    from rentcheck.box.transport import close_all, open_box
    from rentcheck.errors import UsageError
    from rentcheck.pull.remote_roster import build_roster

    if args.manifest_file is not None:
        raise UsageError(
            "--manifest is for a local build; with --host the manifest is ROOT/"
            f"{_MANIFEST} on the box",
            hint="drop --manifest (then `rentcheck pull` brings it home)",
        )
    try:
        box = open_box(args.host, ssh_config=args.ssh_config, connect_timeout=args.connect_timeout)
        roster = build_roster(box, args.root, run_id=args.run_id, write=True, timeout=args.timeout)
    finally:
        close_all()
    manifest = roster.manifest  # parsed and validated as it streamed in, held in columns
    doc = {
        "run_id": manifest.run_id,
        "totals": {"files": len(manifest.files), "bytes": manifest.total_bytes},
        "leftovers": [
            {"path": left.path, "size": left.size, "reason": left.reason}
            for left in manifest.leftovers
        ],
        "box_peak_rss_kib": roster.box_peak_rss_kib,
    }
    where = posixpath.join(roster.root, _MANIFEST)
    where = where if args.host == "local" else f"{args.host}:{where}"
    digest = "sha256:" + manifest.sha256
    return _report_build(args, config, where, doc, digest)


def _report_build(
    args: argparse.Namespace, config: Config, where: str, doc: dict[str, Any], digest: str
) -> int:
    from rentcheck.pull.progress import human_bytes
    from rentcheck.pull.rules import LEFTOVER_PARTIAL, RULES_BY_CODE

    rule = RULES_BY_CODE[LEFTOVER_PARTIAL]
    findings = [
        rule.finding(
            f"left over from an unfinished write ({item['reason']}, {item['size']} bytes): "
            "recorded in the manifest, not hashed; `rentcheck verify` fails on it too",
            path=item["path"],
        )
        for item in doc["leftovers"]
    ]
    totals = doc["totals"]
    wrote = (
        f"wrote {where}: {totals['files']} files, {human_bytes(totals['bytes'])}, "
        f"run {doc['run_id']}"
    )
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    result = GateResult(
        "pull",
        findings,
        extras={
            "manifest": {
                "path": where,
                "run_id": doc["run_id"],
                "totals": totals,
                **(
                    {"box_peak_rss_kib": doc["box_peak_rss_kib"]}
                    if "box_peak_rss_kib" in doc
                    else {}
                ),
            }
        },
        files_checked=totals["files"],
        evidence={"manifest": digest},
        headline=(wrote,),
        # It hashes; it checks nothing yet. Say what it did and what proves the copy.
        proved="Roster written; nothing is verified until `rentcheck verify` checks the "
        "pulled copy against it.",
    )
    run = GateRun(config, "pull", manifest=digest)
    # A roster alone records nothing: no pull happened, and a "pull pass" in the ledger (or
    # a ledger written into the run folder, which verify then finds as an unlisted file) would
    # say otherwise. `rentcheck pull` and `rentcheck verify` record what they proved.
    return finish(args, run, result, command="manifest build", rules=RULES_BY_CODE, record=False)


def run_check(args: argparse.Namespace) -> int:
    from rentcheck.pull.manifest import check_manifest
    from rentcheck.pull.rules import RULES_BY_CODE

    config = config_for(args)
    manifest, findings = check_manifest(args.file)
    summary: dict[str, Any] | None = None
    if manifest is not None:
        summary = {
            "run_id": manifest.run_id,
            "sha256": manifest.sha256,
            "host": manifest.host,
            "created_at": manifest.created_at.isoformat(),
            "files": len(manifest.files),
            "bytes": manifest.total_bytes,
            "leftovers": [left.path for left in manifest.leftovers],
        }
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    result = GateResult("pull", findings, extras={"manifest": summary}, files_checked=1)
    # Checking a manifest's shape is a tool, not the pull gate: nothing goes to the ledger.
    run = GateRun(config, "pull")
    return finish(args, run, result, command="manifest check", rules=RULES_BY_CODE, record=False)

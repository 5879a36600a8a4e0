"""``rentcheck manifest build|check``, ``rentcheck verify`` and ``rentcheck teardown``.

Exit codes as everywhere: 0 pass, 1 findings at or above --fail-level, 2 refused or unusable
input (one line on stderr). ``manifest build`` writes the manifest even when it reports
leftovers (RC510, an error, exactly as ``verify`` will report them): exit 1 then means "written,
but verify will fail until the unfinished writes are dealt with and the manifest rebuilt".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from rentcheck.config import Config, load_config

__all__ = ["add_parsers"]

_MANIFEST = "PULL_MANIFEST.json"


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
        # `-o` is the report file here too, as in every command; the manifest is --manifest
        # (as in verify). --output, its old long name, still works.
        "--manifest",
        "--output",
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

    teardown = sub.add_parser(
        "teardown",
        parents=[common],
        help="the Iron Law: pass only if the pull is verified against the box as it is now, "
        "and the meter-stop action is approved",
        description="Never runs a platform command. Passes only when LOCAL_ROOT/"
        "PULL_VERIFIED.json names the same manifest digest as --manifest-now, every verified "
        "file still has its size, and --approve is given after reading what the meter-stop "
        "action destroys.",
    )
    teardown.add_argument(
        "--verified", required=True, metavar="LOCAL_ROOT", help="the verified pull (or its marker)"
    )
    teardown.add_argument(
        "--manifest-now",
        required=True,
        metavar="FILE",
        help="PULL_MANIFEST.json as copied from the box just now",
    )
    teardown.add_argument("--profile", metavar="NAME", help="platform profile (teardown.profile)")
    teardown.add_argument(
        "--meter-stop", metavar="TEXT", help="the meter-stop action in your words (no profile)"
    )
    teardown.add_argument(
        "--approve", action="store_true", help="I have read what the meter-stop action destroys"
    )
    from rentcheck.commands.finish import add_force_options

    add_force_options(teardown)
    teardown.set_defaults(handler=run_teardown)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _config(args: argparse.Namespace, untrusted: tuple[str, ...] = ()) -> Config:
    """The project's settings; never any found in ``untrusted`` (the pulled folder)."""
    overrides = {"fail-level": args.fail_level, "output-format": args.output_format}
    return load_config(
        ".",
        explicit=args.config,
        isolated=args.isolated,
        overrides=overrides,
        untrusted=untrusted,
    )


def run_build(args: argparse.Namespace) -> int:
    from rentcheck.pull.manifest import build_manifest_file
    from rentcheck.pull.progress import human_bytes
    from rentcheck.pull.rules import LEFTOVER_PARTIAL, RULES_BY_CODE

    config = _config(args)
    path, doc = build_manifest_file(
        args.root,
        args.manifest_file,
        run_id=args.run_id,
        jobs=args.jobs,
        with_blake3=not args.no_blake3,
    )
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
        f"wrote {path}: {totals['files']} files, {human_bytes(totals['bytes'])}, "
        f"run {doc['run_id']}"
    )
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    manifest_digest = "sha256:" + _file_sha256(str(path))
    result = GateResult(
        "pull",
        findings,
        extras={"manifest": {"path": str(path), "run_id": doc["run_id"], "totals": totals}},
        files_checked=totals["files"],
        evidence={"manifest": manifest_digest},
        headline=(wrote,),
        # It hashes; it checks nothing yet. Say what it did and what proves the copy.
        proved="Roster written; nothing is verified until `rentcheck verify` checks the "
        "pulled copy against it.",
    )
    run = GateRun(config, "pull", manifest=manifest_digest)
    return finish(args, run, result, command="manifest build", rules=RULES_BY_CODE)


def _file_sha256(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def run_check(args: argparse.Namespace) -> int:
    from rentcheck.pull.manifest import check_manifest
    from rentcheck.pull.rules import RULES_BY_CODE

    config = _config(args)
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


def run_verify(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import show
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.output import use_color
    from rentcheck.pull.gate import file_verdicts, run_verify, verify_summary
    from rentcheck.pull.marker import write_verified_marker
    from rentcheck.pull.progress import TerminalProgress
    from rentcheck.pull.rules import RULES_BY_CODE
    from rentcheck.pull.settings import verify_settings

    # numpy's BLAS starts a pool of spinning threads at import; verify never multiplies a
    # matrix, and those threads cost the hashing workers CPU (this process only).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    config = _config(args, untrusted=(args.root,))
    settings = verify_settings(config, deep=args.deep, jobs=args.jobs)
    if args.allow_global:
        settings = verify_settings(
            config,
            deep=args.deep,
            jobs=args.jobs,
            allow_globals=(*settings.allow_globals, *args.allow_global),
        )
    progress = None
    if sys.stderr.isatty():
        progress = TerminalProgress(sys.stderr, color=use_color(args.color, True))
    started = time.monotonic()
    result = run_verify(
        args.root,
        settings,
        manifest=args.manifest,
        expected_run_id=args.expect_run_id,
        progress=progress,
    )
    seconds = round(time.monotonic() - started, 3)
    if progress is not None:
        progress.finish()
    manifest_digest = None if result.manifest is None else "sha256:" + result.manifest.sha256
    gate = GateResult(
        "verify",
        list(result.findings),
        files_checked=len(result.files),
        advisory=settings.advisory,
        evidence={"manifest": manifest_digest} if manifest_digest else {},
    )
    run = GateRun(config, "verify", manifest=manifest_digest)
    # verify reports RC5xx only; the full rule table costs start-up time
    verdict = run.conclude(gate, exit_zero=args.exit_zero, rules=RULES_BY_CODE, record=False)
    marker = None
    if verdict.passed:
        marker = write_verified_marker(
            result,
            fail_level=verdict.fail_level,
            allow=settings.advisory,
            extra={"settings": settings.policy(), "seconds": seconds},
        )
        gate.evidence["marker"] = "sha256:" + _file_sha256(str(marker))
    gate.extras = {
        "verify": {
            "root": os.fspath(args.root),
            **verify_summary(result),
            "marker": None if marker is None else str(marker),
            "deep": settings.deep,
            "hash": "sha256",
            "settings": settings.policy(),
            "bytes_read": result.bytes_read,
            "seconds": seconds,
        }
    }
    if config.output_format == "json":  # only json shows extras: a row per file is costly
        gate.extras["verify"]["files"] = file_verdicts(
            result, verdict.fail_level, settings.advisory
        )
    run.record(gate, verdict)
    if marker is None:
        sys.stderr.write("rentcheck: verification failed: no PULL_VERIFIED.json written\n")
    else:
        gate.headline = (f"verified: wrote {marker}",)
        gate.proved = _what_verify_proved(result)
    return show(args, run, gate, verdict, command="verify", rules=RULES_BY_CODE)


def _what_verify_proved(result: Any) -> str:
    """What a clean verify proved: files, bytes, digests, and the checkpoints judged
    (structurally valid, safe to load, finite)."""
    from rentcheck.pull.progress import human_bytes
    from rentcheck.pull.verdicts import rows_of

    nbytes = checkpoints = tensors = 0
    for _, size, _, _, kind, count, _ in rows_of(result.files):  # one pass, no objects made
        nbytes += size
        checkpoints += kind.startswith(("safetensors", "torch", "pickle"))
        tensors += count
    said = f"{len(result.files)} files, {human_bytes(nbytes)}, all digests match"
    if checkpoints:
        checks = "loaded with torch too" if result.deep else "safe to load"
        said += (
            f"; {checkpoints} checkpoint(s) structurally valid, {checks}, {tensors} tensors finite"
        )
    return said + "."


def run_teardown(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import finish, force_reason
    from rentcheck.errors import UsageError
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.rules import ORDER_RULES
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.rules import RULES_BY_CODE
    from rentcheck.pull.settings import teardown_settings
    from rentcheck.pull.teardown import check_teardown, describe, meter_stop_plan
    from rentcheck.pull.teardown_rules import TEARDOWN_RULES_BY_CODE

    verified = args.verified if os.path.isdir(args.verified) else os.path.dirname(args.verified)
    config = _config(args, untrusted=(verified or ".",))
    reason = force_reason(args)
    settings = teardown_settings(config, {"profile": args.profile, "meter_stop": args.meter_stop})
    if settings.profile is None and settings.meter_stop is None:
        raise UsageError(
            "teardown needs the platform: --profile NAME (see `rentcheck profiles`)",
            hint="or describe the meter-stop action with --meter-stop TEXT",
        )
    profile = None
    if settings.profile is not None:
        from rentcheck.profiles import load_profile

        profile = load_profile(settings.profile, config)
    plan = meter_stop_plan(profile, settings.meter_stop)
    now_digest = None
    if os.path.isfile(args.manifest_now):
        now_digest = "sha256:" + _file_sha256(args.manifest_now)
    run = GateRun(config, "teardown", manifest=now_digest, force_reason=reason)
    order_met = run.precheck()
    result = check_teardown(args.verified, args.manifest_now, plan, approved=args.approve)
    gate = GateResult(
        "teardown",
        list(result.findings),
        extras={"teardown": result.to_dict()},
        files_checked=result.files_checked,
        profile=settings.profile,
        headline=(describe(result, order_met=order_met).rstrip("\n"),),
    )
    rules = {**RULES_BY_CODE, **TEARDOWN_RULES_BY_CODE, **{r.code: r for r in ORDER_RULES}}
    return finish(args, run, gate, command="teardown", rules=rules)

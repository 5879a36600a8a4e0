"""``rentcheck manifest build|check``, ``pull``, ``verify`` and ``teardown``.

Exit codes as everywhere: 0 pass, 1 findings at or above --fail-level, 2 refused or unusable
input (one line on stderr). ``manifest build`` writes the manifest even when it reports
leftovers (RC510, an error, exactly as ``verify`` will report them): exit 1 then means "written,
but verify will fail until the unfinished writes are dealt with and the manifest rebuilt".
"""

from __future__ import annotations

import argparse
import sys
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
        "--host",
        help="build it on this box (an ssh alias, or local) over one SSH exec: the stdlib "
        "builder goes on stdin, ROOT/PULL_MANIFEST.json is written there",
    )
    _connection_options(build)
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

    _add_pull_parser(sub, common)

    teardown = sub.add_parser(
        "teardown",
        parents=[common],
        help="the Iron Law: pass only if the pull is verified against the box as it is now, "
        "and the meter-stop action is approved",
        description="Never runs a platform command, never deletes. Re-reads the box now "
        "(--host) and compares it file by file, by content, with LOCAL_ROOT/PULL_VERIFIED.json: "
        "passes only when nothing was added or changed on the box since the pull, no local "
        "file changed since verify, and the meter-stop action was approved (--approve, or "
        "typing the platform's verb on a terminal) after reading what it destroys.",
    )
    teardown.add_argument(
        "--verified", required=True, metavar="LOCAL_ROOT", help="the verified pull (or its marker)"
    )
    now = teardown.add_mutually_exclusive_group()
    now.add_argument(
        "--host",
        help="re-read the box now over SSH (an ssh alias, or local): sizes and mtimes of every "
        "file, SHA-256 of any that differ",
    )
    now.add_argument(
        "--manifest-now",
        metavar="FILE",
        help="instead of --host: PULL_MANIFEST.json rebuilt on the box just now",
    )
    teardown.add_argument(
        "--remote-root",
        metavar="PATH",
        help="the result directory on the box (default: the one the pull recorded)",
    )
    teardown.add_argument(
        "--rehash",
        action="store_true",
        help="hash every file on the box and here, not only those whose size or mtime differ",
    )
    _connection_options(teardown)
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


def _connection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("connection")
    g.add_argument("--ssh-config", metavar="FILE", help="ssh_config to resolve aliases with")
    g.add_argument("--connect-timeout", type=float, metavar="S", help="TCP and auth timeout (10)")
    g.add_argument(
        "--timeout", type=float, default=900.0, metavar="S",
        help="server-side limit of one roster step on the box (900)",
    )  # fmt: skip


def _add_pull_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    pull = sub.add_parser(
        "pull",
        parents=[common],
        help="bring a run's results home: roster on the box, resumable transfer, verify",
        description="Build the roster on the box (nothing installed or left there), refuse "
        "any path that would land outside LOCAL_ROOT, transfer with resume (rsync "
        "--partial --append-verify when both ends have rsync, else ranged reads), retry "
        "within --deadline, pull again what changed meanwhile, then verify and write "
        "LOCAL_ROOT/PULL_VERIFIED.json. Exit 0 verified, 1 findings, 2 unusable input.",
    )
    pull.add_argument(
        "source", metavar="HOST:REMOTE_ROOT", nargs="?",
        help="or REMOTE_ROOT with --host or --hosts (with --hosts: default each host's "
        "remote_root from the inventory)",
    )  # fmt: skip
    pull.add_argument(
        "root", metavar="LOCAL_ROOT", nargs="?",
        help="where the files go (created); with --hosts each host into LOCAL_ROOT/NAME "
        "(default: the inventory's local_root)",
    )  # fmt: skip
    pull.add_argument("--host", help="the box (an ssh alias, or local) when SOURCE has no HOST:")
    pull.add_argument(
        "--hosts", action="append", metavar="TAG",
        help="instead of --host: the inventory's hosts ([tool.rentcheck.hosts]): all, a tag or "
        "a name; each pulled into LOCAL_ROOT/NAME, at once, one merged table (repeatable)",
    )  # fmt: skip
    pull.add_argument(
        "--pool", type=int, default=8, metavar="N",
        help="with --hosts: at most N hosts at a time (8; keeps a jump host's MaxSessions)",
    )  # fmt: skip
    pull.add_argument(
        "--method", choices=("auto", "rsync", "ranged"), default="auto",
        help="auto: rsync when both ends have it, else ranged reads over SSH",
    )  # fmt: skip
    pull.add_argument(
        "--deadline", default="6h", metavar="AGE",
        help="give up retrying after this long in all (90s, 30m, 6h; default 6h)",
    )  # fmt: skip
    pull.add_argument("--bwlimit", type=int, metavar="KIB_S", help="cap the rate (KiB/s)")
    pull.add_argument(
        "--write-manifest", action="store_true",
        help="also leave REMOTE_ROOT/PULL_MANIFEST.json on the box (default: nothing written)",
    )  # fmt: skip
    pull.add_argument("--run-id", metavar="ID", help="the roster's run id (default: time-random)")
    pull.add_argument("--expect-run-id", metavar="ID", help="fail unless the roster is for ID")
    pull.add_argument("--deep", action="store_true", default=None, help="as in verify")
    pull.add_argument("--jobs", type=int, metavar="N", help="files verified at once")
    pull.add_argument("--allow-global", action="append", metavar="MODULE.NAME",
                      help="as in verify (repeatable)")  # fmt: skip
    _connection_options(pull)
    pull.set_defaults(handler=run_pull)


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

    if args.host is not None:
        return _build_on_box(args, _config(args))
    # Run inside the run folder or not, the project (its config, its ledger) is never there.
    config = _config(args, untrusted=(args.root,))
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
    import hashlib
    import json
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
    doc = json.loads(roster.data)
    where = posixpath.join(roster.root, _MANIFEST)
    where = where if args.host == "local" else f"{args.host}:{where}"
    digest = "sha256:" + hashlib.sha256(roster.data).hexdigest()
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
        extras={"manifest": {"path": where, "run_id": doc["run_id"], "totals": totals}},
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
    from rentcheck.pull.rules import RULES_BY_CODE

    config = _config(args, untrusted=(args.root,))
    run, gate, verdict = verify_and_mark(
        args, config, args.root, manifest=args.manifest, expected_run_id=args.expect_run_id
    )
    return show(args, run, gate, verdict, command="verify", rules=RULES_BY_CODE)


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


def run_teardown(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import finish, force_reason
    from rentcheck.gates.rules import ORDER_RULES
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.rules import RULES_BY_CODE
    from rentcheck.pull.teardown_gate import (
        TeardownRequest,
        teardown_manifest,
        teardown_result,
        verified_dir,
    )
    from rentcheck.pull.teardown_rules import TEARDOWN_RULES_BY_CODE

    config = _config(args, untrusted=(verified_dir(args.verified),))
    reason = force_reason(args)
    request = TeardownRequest(
        verified=args.verified,
        host=args.host,
        manifest_now=args.manifest_now,
        remote_root=args.remote_root,
        profile=args.profile,
        meter_stop=args.meter_stop,
        approve=args.approve,
        rehash=args.rehash,
        ssh_config=args.ssh_config,
        connect_timeout=args.connect_timeout,
        timeout=args.timeout,
    )
    manifest = teardown_manifest(request)
    run = GateRun(config, "teardown", host=args.host, manifest=manifest, force_reason=reason)
    ask = _typed_verb if _can_ask(config) else None
    gate = teardown_result(config, request, run, ask=ask)
    rules = {**RULES_BY_CODE, **TEARDOWN_RULES_BY_CODE, **{r.code: r for r in ORDER_RULES}}
    return finish(args, run, gate, command="teardown", rules=rules)


def _can_ask(config: Config) -> bool:
    text = config.output_format in ("text", "concise")
    return text and sys.stdin.isatty() and sys.stderr.isatty()


def _typed_verb(plan: Any) -> bool:
    """Ask the person to type the platform's verb; True only for exactly that word."""
    sys.stderr.write(
        f"Stopping the meter means: {plan.action}. rentcheck will not run it.\n"
        f"Type {plan.verb!r} to approve it (anything else refuses): "
    )
    sys.stderr.flush()
    return bool(sys.stdin.readline().strip() == plan.verb)


def _source(args: argparse.Namespace) -> tuple[str, str]:
    """(host, remote root) from ``HOST:REMOTE_ROOT`` or ``--host HOST REMOTE_ROOT``."""
    from rentcheck.errors import UsageError

    if args.host is not None:
        return args.host, args.source
    host, sep, root = args.source.partition(":")
    if not sep or not host or not root or "/" in host:
        raise UsageError(
            f"{args.source!r} is not HOST:REMOTE_ROOT",
            hint="e.g. `rentcheck pull mybox:/root/run results/`, or pass --host HOST "
            "(--host local for a directory on this machine)",
        )
    return host, root


def run_pull(args: argparse.Namespace) -> int:
    from rentcheck.commands.finish import finish
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.transfer import PullProgress
    from rentcheck.pull.transfer_rules import PULL_GATE_RULES

    if args.hosts:
        return _run_pull_fleet(args)
    if args.source is None or args.root is None:
        from rentcheck.errors import UsageError

        raise UsageError(
            "pull needs HOST:REMOTE_ROOT LOCAL_ROOT",
            hint="e.g. `rentcheck pull mybox:/root/run results/` (or --hosts all, with the "
            "inventory's remote_root and local_root)",
        )
    host, remote_root = _source(args)
    deadline = _deadline(args)
    # Settings from the project only: a rentcheck.yaml that came with the pull is data.
    config = _config(args, untrusted=(args.root,))
    progress = PullProgress(sys.stderr) if sys.stderr.isatty() else None
    result = _pull_one(
        args,
        config,
        host=host,
        remote_root=remote_root,
        local_root=args.root,
        deadline=deadline,
        progress=progress,
    )
    digest = result.evidence.get("manifest")
    run = GateRun(config, "pull", host=host, manifest=digest)
    rules = {r.code: r for r in PULL_GATE_RULES}
    return finish(args, run, result, command="pull", rules=rules)


def _deadline(args: argparse.Namespace) -> float:
    from rentcheck.errors import UsageError
    from rentcheck.gates.order import parse_age

    try:
        return parse_age(args.deadline)
    except ValueError as exc:
        raise UsageError(f"--deadline: {exc}", hint="e.g. --deadline 30m") from None


def _run_pull_fleet(args: argparse.Namespace) -> int:
    """``pull --hosts``: every inventory host's remote root into its own folder (REMOTE_ROOT
    and LOCAL_ROOT/NAME, or the inventory's: ``rentcheck.box.fleet_pull``), at most
    ``--pool`` at once; one judgement (the host's config) and ledger line per host, one
    merged table."""
    from rentcheck.box.fleet import Host, host_settings, inventory, select_hosts
    from rentcheck.box.fleet_pull import pull_places
    from rentcheck.box.fleet_run import HostResult, named_for, run_fleet
    from rentcheck.commands.fleet import report_fleet
    from rentcheck.errors import UsageError
    from rentcheck.pull.transfer_rules import PULL_GATE_RULES

    if args.host is not None:
        raise UsageError("pull takes --host or --hosts, not both", hint="drop one of them")
    if args.pool < 1:
        raise UsageError(f"--pool {args.pool}: must be at least 1", hint="e.g. --pool 8")
    if (args.source is None) != (args.root is None):
        raise UsageError(
            "pull --hosts takes REMOTE_ROOT LOCAL_ROOT, or neither",
            hint="neither: each host's remote_root and local_root from the inventory",
        )
    deadline = _deadline(args)
    untrusted = () if args.root is None else (args.root,)
    config = _config(args, untrusted=untrusted)
    hosts = select_hosts(inventory(config), args.hosts)
    places = pull_places(config, hosts, remote_root=args.source, local_root=args.root)
    if args.root is None:  # the folders the inventory names are data too: never settings
        config = _config(args, untrusted=tuple(p.local_root for p in places))
        hosts = select_hosts(inventory(config), args.hosts)
        places = pull_places(config, hosts)
    place_of = {place.host.name: place for place in places}

    def one(project: Config, host: Host) -> HostResult:
        place = place_of[host.name]
        host_config, settings = host_settings(project, host)
        connection = argparse.Namespace(**vars(args))
        connection.ssh_config = args.ssh_config or settings.ssh_config
        connection.connect_timeout = args.connect_timeout or settings.connect_timeout
        result = _pull_one(
            connection,
            host_config,
            host=host.alias,
            remote_root=place.remote_root,
            local_root=place.local_root,
            deadline=deadline,
            progress=None,  # hosts at once: no terminal progress line (they would interleave)
        )
        result.findings = named_for(host, result.findings)
        result.host = host.name
        extras = {"local_root": place.local_root, "remote_root": place.remote_root}
        return HostResult(host, host_config, result=result, extras=extras)

    outcomes = run_fleet(config, hosts, one, jobs=args.pool)
    rules = {r.code: r for r in PULL_GATE_RULES}
    return report_fleet(args, config, "pull", outcomes, rules, command="pull")


def _pull_one(
    args: argparse.Namespace,
    config: Config,
    *,
    host: str,
    remote_root: str,
    local_root: str,
    deadline: float,
    progress: Any,
) -> Any:
    """One box's pull, then verify of what arrived (its own ledger line): the pull gate's
    result, not yet judged. Raises RentcheckError when the box cannot be reached."""
    from rentcheck.gates.judge import GateResult
    from rentcheck.pull.pull_run import PullRequest, pull_to

    request = PullRequest(
        host=host,
        remote_root=remote_root,
        local_root=local_root,
        method=args.method,
        deadline_s=deadline,
        write_manifest=args.write_manifest,
        run_id=args.run_id,
        bwlimit_kib=args.bwlimit,
        ssh_config=args.ssh_config,
        connect_timeout=args.connect_timeout,
        timeout=args.timeout,
    )
    outcome = pull_to(request, progress)
    if progress is not None:
        progress.finish()
    extras: dict[str, Any] = {"pull": outcome.to_dict()}
    findings = list(outcome.findings)
    headline: tuple[str, ...] = ()
    proved = None
    digest = None
    if outcome.manifest is not None:
        digest = "sha256:" + outcome.manifest.sha256
    if outcome.transferred:
        source = {"host": host, "remote_root": outcome.box_root, "run_id": outcome.manifest.run_id}  # type: ignore[union-attr]
        _, verified, _ = verify_and_mark(
            args,
            config,
            local_root,
            expected_run_id=args.expect_run_id,
            marker_extra={"source": source},
            show_progress=not args.hosts,
        )
        findings += verified.findings
        extras.update(verified.extras)
        headline = (_pull_said(outcome), *verified.headline)
        proved = verified.proved
    return GateResult(
        "pull",
        findings,
        extras=extras,
        files_checked=len(outcome.manifest.files) if outcome.manifest else 0,
        host=host,
        evidence={"manifest": digest} if digest else {},
        headline=headline,
        proved=proved,
    )


def _pull_said(outcome: Any) -> str:
    from rentcheck.pull.progress import human_bytes

    info = outcome.to_dict()
    tries = len(info["attempts"])
    said = (
        f"pulled {info['files']} files, {human_bytes(info['bytes'])} from "
        f"{info['host']}:{info['box_root']} into {info['local_root']} ({info['method']}, "
        f"{tries} {'try' if tries == 1 else 'tries'}, {human_bytes(info['bytes_sent'])} sent)"
    )
    if info["repulled"]:
        said += f"; pulled again after they changed on the box: {len(info['repulled'])} file(s)"
    return said + f"; wrote {info['manifest']}"

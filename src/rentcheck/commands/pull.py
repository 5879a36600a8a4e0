"""``rentcheck pull``: the roster built on the box, the files brought home with resume, then
verify. Exit 0 verified, 1 findings, 2 refused or unusable input (one line on stderr)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rentcheck.commands.pull_options import config_for, connection_options, verify_and_mark
from rentcheck.config import Config

__all__ = ["add_parsers"]


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    _add_pull_parser(sub, common)


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
    connection_options(pull)
    pull.set_defaults(handler=run_pull)


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
    config = config_for(args, untrusted=(args.root,))
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
    config = config_for(args, untrusted=untrusted)
    hosts = select_hosts(inventory(config), args.hosts)
    places = pull_places(config, hosts, remote_root=args.source, local_root=args.root)
    if args.root is None:  # the folders the inventory names are data too: never settings
        config = config_for(args, untrusted=tuple(p.local_root for p in places))
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
    files = len(outcome.manifest.files) if outcome.manifest else 0
    if outcome.manifest is not None:
        digest = "sha256:" + outcome.manifest.sha256
    if outcome.transferred:
        source = {"host": host, "remote_root": outcome.box_root, "run_id": outcome.manifest.run_id}  # type: ignore[union-attr]
        said = _pull_said(outcome)
        # verify reads the roster again from PULL_MANIFEST.json: the pull's copy goes first,
        # so a million-file pull holds one roster at a time, not two.
        outcome.manifest = None
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
        headline = (said, *verified.headline)
        proved = verified.proved
    return GateResult(
        "pull",
        findings,
        extras=extras,
        files_checked=files,
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

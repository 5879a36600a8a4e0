"""``rentcheck stale``: verified-stamp ages, and optionally whether the cited sources changed."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rentcheck.config import Config, load_config, section_error
from rentcheck.errors import UsageError
from rentcheck.model import Finding, Severity

if TYPE_CHECKING:
    from rentcheck.profiles.stale import StaleSettings


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    p = sub.add_parser(
        "stale",
        parents=[common],
        help="find stale, soon-stale and malformed `verified YYYY-MM` stamps in markdown",
        description=(
            "Check the age of every `verified <source> YYYY-MM` stamp in markdown files "
            "(default: the project's own profiles, in the directories of profiles.paths). "
            "A stamp older than --max-age-months is an error, "
            "one that turns stale within --warn-months a warning. --check-sources also fetches "
            "each cited source URL (needs rentcheck[sources]) and compares it with the "
            "fingerprint in sources.lock.json; --record-sources writes that file. "
            "Exit 0 clean, 1 findings, 2 error."
        ),
    )
    p.add_argument("paths", nargs="*", help="markdown files or directories")
    p.add_argument("--max-age-months", type=int, metavar="N", help="stale after N months (6)")
    p.add_argument("--warn-months", type=int, metavar="N", help="warn N months before (1)")
    p.add_argument(
        "--today", metavar="YYYY-MM", help="the month to judge against ($RENTCHECK_TODAY)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check-sources", action="store_true", help="fetch cited sources; report dead or changed"
    )
    mode.add_argument(
        "--record-sources",
        action="store_true",
        help="fetch cited sources and record their fingerprints in the lock file",
    )
    p.add_argument(
        "--require-network",
        action="store_true",
        help="fail (instead of a note) when no source can be reached",
    )
    p.add_argument(
        "--lock", metavar="FILE", help="lock file (default: sources.lock.json beside each file)"
    )
    p.add_argument("--timeout", type=float, default=10.0, metavar="S", help="per request (10)")
    p.add_argument("--retries", type=int, default=2, metavar="N", help="per source (2)")
    p.add_argument(
        "--per-host", type=int, default=2, metavar="N", help="parallel requests per host (2)"
    )
    p.set_defaults(handler=run)


def _int_setting(
    config: Config, table: Mapping[str, Any], key: str, given: int | None, default: int
) -> int:
    value = given if given is not None else table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        if given is not None:
            raise UsageError(f"--{key} must be a whole number >= 0", hint=f"e.g. --{key} 6")
        raise section_error(config, "profiles", key, "must be a whole number >= 0", f"{key} = 6")
    return value


def _settings(args: argparse.Namespace, config: Config) -> StaleSettings:
    from rentcheck.profiles.load import profiles_settings
    from rentcheck.profiles.months import effective_today
    from rentcheck.profiles.stale import StaleSettings

    table = profiles_settings(config)
    raw = table.get("dated-without-verified", "note")
    # YAML 1.1 reads a bare `off` as false.
    level_text = "off" if raw is False else str(raw).lower()
    if level_text == "off":
        level: Severity | None = None
    else:
        try:
            level = Severity.parse(level_text)
        except ValueError:
            raise section_error(
                config,
                "profiles",
                "dated-without-verified",
                f"is {level_text!r}",
                "use off, note, warning or error",
            ) from None
    if args.timeout <= 0 or args.retries < 0 or args.per_host < 1:
        raise UsageError(
            "--timeout must be > 0, --retries >= 0 and --per-host >= 1",
            hint="e.g. --timeout 10 --retries 2 --per-host 2",
        )
    return StaleSettings(
        today=effective_today(args.today),
        max_age_months=_int_setting(config, table, "max-age-months", args.max_age_months, 6),
        warn_months=_int_setting(config, table, "warn-months", args.warn_months, 1),
        dated_without_verified=level,
    )


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from rentcheck.profiles.document import read_markdown
    from rentcheck.profiles.gather import markdown_files, own_profiles
    from rentcheck.profiles.stale import judge_stamps, stamp_record, stamp_status
    from rentcheck.profiles.stamps import find_stamps
    from rentcheck.registry import all_rules

    overrides = {"output-format": args.output_format, "fail-level": args.fail_level}
    start = args.paths[0] if args.paths else "."
    config = load_config(start, explicit=args.config, isolated=args.isolated, overrides=overrides)
    settings = _settings(args, config)
    files = markdown_files(args.paths, config) if args.paths else own_profiles(config)
    if not files and not args.paths:
        return _no_profiles_of_its_own(args, config)
    if not files:
        raise UsageError("no markdown files to check", hint="pass files or directories with *.md")
    findings: list[Finding] = []
    per_file = []
    counts: Counter[str] = Counter()
    docs = []
    for abspath, shown in files:
        doc = read_markdown(abspath, shown)
        docs.append((abspath, doc))
        stamps = find_stamps(doc)
        findings += judge_stamps(shown, stamps, settings)
        statuses = [stamp_status(s, settings) for s in stamps]
        counts.update(statuses)
        per_file.append(
            {
                "path": shown,
                "stamps": [
                    stamp_record(s, settings, st) for s, st in zip(stamps, statuses, strict=True)
                ],
            }
        )
    sources_extra: dict[str, Any] = {}
    if args.check_sources or args.record_sources:
        found, sources_extra = _sources(args, docs, str(settings.today))
        findings += found
    if not any(counts[k] for k in ("fresh", "stale-soon", "stale", "future")):
        sys.stderr.write(
            "rentcheck: warning: no dated `verified` stamp found in the files checked\n"
        )
    extra = {
        "staleness": {
            **settings.to_dict(),
            "counts": dict(sorted(counts.items())),
            "files": per_file,
        }
    }
    if sources_extra:
        extra["sources"] = sources_extra
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun

    result = GateResult("stale", findings, extras=extra, files_checked=len(files))
    return finish(args, GateRun(config, "stale"), result, command="stale", rules=all_rules())


NO_PROFILES = (
    "Nothing to check: this project lists no profile directories of its own (profiles.paths "
    "in its rentcheck config). The profiles shipped with rentcheck are rentcheck's to keep "
    "fresh; to check some anyway, name them: rentcheck stale DIR_OR_FILE.md"
)


def _no_profiles_of_its_own(args: argparse.Namespace, config: Config) -> int:
    """Say that there is nothing of the project's to judge (exit 0, nothing recorded)."""
    from rentcheck.commands.finish import finish
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    extra: dict[str, Any] = {"staleness": {"counts": {}, "files": [], "profile_dirs": []}}
    result = GateResult("stale", [], extras=extra, files_checked=0, proved=NO_PROFILES)
    run = GateRun(config, "stale")
    return finish(args, run, result, command="stale", rules=all_rules(), record=False)


def _packaged_dir() -> str | None:
    from importlib.resources import files

    packaged = files("rentcheck") / "_profiles"
    return os.path.abspath(str(packaged)) if packaged.is_dir() else None


def _sources(
    args: argparse.Namespace, docs: list[Any], today: str
) -> tuple[list[Finding], dict[str, Any]]:
    from rentcheck.profiles.fetch import fetch_all
    from rentcheck.profiles.sources import (
        LOCK_NAME,
        cited_sources,
        judge_fetches,
        read_lock,
        record_entries,
        write_lock,
    )

    cited = []
    for abspath, doc in docs:
        lock = (
            os.path.abspath(args.lock)
            if args.lock
            else os.path.join(os.path.dirname(abspath), LOCK_NAME)
        )
        cited += cited_sources(doc, lock)
    locks = {source.lock: read_lock(source.lock) for source in cited}
    fetched = fetch_all(
        [s.url for s in cited], timeout=args.timeout, retries=args.retries, per_host=args.per_host
    )
    findings = judge_fetches(
        cited, fetched, locks, require_network=args.require_network, compare=args.check_sources
    )
    extra: dict[str, Any] = {
        "cited": len({s.url for s in cited}),
        "answered": sum(1 for r in fetched.values() if r.answered),
    }
    if args.record_sources:
        packaged = _packaged_dir()
        written = {}
        for lock, old in locks.items():
            urls = [s.url for s in cited if s.lock == lock]
            if not any(fetched[u].answered for u in urls):
                continue  # nothing new to record: never overwrite a lock with less
            if packaged and os.path.dirname(lock).startswith(packaged):
                raise UsageError(
                    f"refusing to write {lock} inside the installed rentcheck package",
                    hint="record into your own file with --lock FILE",
                )
            entries = record_entries(old, dict.fromkeys(urls), fetched, today)
            write_lock(lock, entries)
            written[lock] = len(entries)
        extra["recorded"] = written
    return findings, extra

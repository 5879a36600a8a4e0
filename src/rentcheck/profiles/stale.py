"""``rentcheck stale``: how old each verified stamp is, judged against today (pure).

Boundaries, in whole months: age = today - stamp. A stamp is stale when its age exceeds
``max_age_months`` (2026-03 with 6 is fresh through 2026-09, stale from 2026-10), stale soon
when it will be stale within ``warn_months`` (by default: in its last fresh month), future when
dated after today.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rentcheck.model import Finding, Severity
from rentcheck.profiles import rules
from rentcheck.profiles.months import Month
from rentcheck.profiles.stamps import Stamp, StampKind

__all__ = ["StaleSettings", "judge_stamps", "stamp_status"]


@dataclass(frozen=True)
class StaleSettings:
    today: Month
    max_age_months: int = 6
    warn_months: int = 1
    dated_without_verified: Severity | None = Severity.NOTE  # None: not reported

    def to_dict(self) -> dict[str, Any]:
        level = self.dated_without_verified
        return {
            "today": str(self.today),
            "max_age_months": self.max_age_months,
            "warn_months": self.warn_months,
            "dated_without_verified": level.label if level is not None else "off",
        }


def stamp_status(stamp: Stamp, settings: StaleSettings) -> str:
    """fresh | stale-soon | stale | future | malformed | not-re-verified | dated-citation |
    unverified."""
    if stamp.kind is not StampKind.VERIFIED or stamp.month is None:
        return str(stamp.kind.value)
    age = settings.today - stamp.month
    if age < 0:
        return "future"
    if age > settings.max_age_months:
        return "stale"
    if settings.warn_months > 0 and age > settings.max_age_months - settings.warn_months:
        return "stale-soon"
    return "fresh"


def _where(stamp: Stamp) -> str:
    if stamp.in_frontmatter:
        return f"source {stamp.source}" if stamp.source else "frontmatter"
    return f"source {stamp.source!r}" if stamp.source else "no source named"


def judge_stamps(path: str, stamps: list[Stamp], settings: StaleSettings) -> list[Finding]:
    findings = []
    for stamp in stamps:
        status = stamp_status(stamp, settings)
        finding = _finding_for(status, stamp, settings)
        if finding is None:
            continue
        rule, severity, message = finding
        findings.append(
            rule.finding(
                message,
                path=path,
                line=stamp.line,
                col=stamp.col,
                end_line=stamp.end_line,
                end_col=stamp.end_col,
                severity=severity,
                details=stamp_record(stamp, settings, status),
            )
        )
    return findings


def _finding_for(
    status: str, stamp: Stamp, settings: StaleSettings
) -> tuple[Any, Severity, str] | None:
    month = stamp.month
    if status == "stale" and month is not None:
        since = month.plus(settings.max_age_months + 1)
        message = (
            f"stamp {stamp.text!r} is {settings.today - month} months old (limit "
            f"{settings.max_age_months}; {_where(stamp)}): stale since {since}; re-verify the fact"
        )
        return rules.STALE_STAMP, rules.STALE_STAMP.default_severity, message
    if status == "stale-soon" and month is not None:
        since = month.plus(settings.max_age_months + 1)
        message = (
            f"stamp {stamp.text!r} ({_where(stamp)}) becomes stale in {since}; "
            "re-verify the fact before then"
        )
        return rules.STALE_SOON_STAMP, rules.STALE_SOON_STAMP.default_severity, message
    if status == "future":
        message = f"stamp {stamp.text!r} is dated after today ({settings.today})"
        return rules.FUTURE_STAMP, rules.FUTURE_STAMP.default_severity, message
    if status == "malformed":
        message = f"malformed stamp {stamp.text!r}: {stamp.problem}; write YYYY-MM"
        return rules.MALFORMED_STAMP, rules.MALFORMED_STAMP.default_severity, message
    if status == "not-re-verified":
        message = f"{stamp.text!r}: this fact counts as unverified until it is checked again"
        return rules.NOT_REVERIFIED_STAMP, rules.NOT_REVERIFIED_STAMP.default_severity, message
    if status == "dated-citation" and settings.dated_without_verified is not None:
        if stamp.month is None:
            message = f"citation ({stamp.text}) has an impossible month: {stamp.problem}"
        else:
            message = (
                f"citation ({stamp.text}) is dated but does not say `verified`, so its age is "
                "not checked; write `verified <source> YYYY-MM` if it is a check"
            )
        return rules.DATED_CITATION, settings.dated_without_verified, message
    return None


def stamp_record(
    stamp: Stamp, settings: StaleSettings, status: str | None = None
) -> dict[str, Any]:
    """One stamp as JSON: where, what, how old, and the verdict."""
    month = stamp.month
    return {
        "line": stamp.line,
        "col": stamp.col,
        "kind": stamp.kind.value,
        "status": status or stamp_status(stamp, settings),
        "text": stamp.text,
        "month": str(month) if month else None,
        "age_months": settings.today - month if month else None,
        "source": stamp.source,
        "section": stamp.section,
        "section_level": stamp.in_heading,
        "frontmatter": stamp.in_frontmatter,
    }

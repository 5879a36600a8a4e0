"""RC910-RC913: the order of the gates, checked against the ledger before a gate runs."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = [
    "ORDER_RULES",
    "PREREQUISITE_FAILED",
    "PREREQUISITE_FORCED",
    "PREREQUISITE_MISSING",
    "PREREQUISITE_STALE",
]

_WHY = (
    "Each lifecycle gate is a test that must pass before the next phase. A launch whose smoke "
    "never ran, or ran on yesterday's train.py, finds the bug after the meter started; a "
    "teardown whose verify was of another manifest destroys the only copy of what is new."
)

PREREQUISITE_MISSING = Rule(
    code="RC910",
    name="prerequisite-gate-missing",
    family="gates",
    summary="A gate this one requires has not passed for these files, this host or manifest",
    why=_WHY,
    example_bad="rentcheck gate launch --host box   (smoke never ran)",
    example_good="rentcheck smoke && rentcheck gate launch --host box",
    fix="Run the command the finding names; or pass --force --reason TEXT (recorded).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

PREREQUISITE_STALE = Rule(
    code="RC911",
    name="prerequisite-gate-stale",
    family="gates",
    summary="A required gate passed, but for other files, or longer ago than allowed",
    why=_WHY + " Code changed since the smoke passed is code no gate has run.",
    example_bad="smoke passed, then train.py changed; rentcheck gate launch --host box",
    example_good="rentcheck smoke (again) && rentcheck gate launch --host box",
    fix="Run the required gate again on the current files; `rentcheck status` lists what "
    "changed since it passed.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

PREREQUISITE_FAILED = Rule(
    code="RC912",
    name="prerequisite-gate-failed",
    family="gates",
    summary="The latest run of a required gate, on these files or this host, failed",
    why=_WHY,
    example_bad="rentcheck smoke  (exit 1)  then  rentcheck gate launch --host box",
    example_good="fix what smoke found, rerun it, then launch",
    fix="Fix what the required gate found and run it again.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

PREREQUISITE_FORCED = Rule(
    code="RC913",
    name="gate-passed-by-force",
    family="gates",
    summary="A gate was passed with --force although a prerequisite was missing or stale",
    why="A force is a decision a person took; the ledger keeps it, with its reason, so the "
    "record of how a run got here stays true.",
    example_bad="rentcheck gate launch --host box --force --reason 'smoke box is down'",
    example_good="rentcheck gate launch --host box   (every prerequisite passed)",
    fix="Nothing to fix now; run the skipped gates when you can.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

ORDER_RULES: tuple[Rule, ...] = (
    PREREQUISITE_MISSING,
    PREREQUISITE_STALE,
    PREREQUISITE_FAILED,
    PREREQUISITE_FORCED,
)

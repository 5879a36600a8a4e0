"""RC910-RC914: the order of the gates, checked against the ledger before a gate runs, and
the evidence a gate must have seen to pass."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = [
    "NO_EVIDENCE",
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

NO_EVIDENCE = Rule(
    code="RC914",
    name="gate-saw-nothing",
    family="gates",
    summary="A gate found nothing wrong, but saw less than it must see to pass",
    why="A pass is proof. A lint of 0 files, a smoke of 0 optimizer steps, a verify of no "
    "file or a teardown that never re-read the box found nothing because it looked at "
    "nothing; passing them would release a box, or start a paid run, on no evidence at all.",
    example_bad="rentcheck check   ->  All checks passed (0 files checked)",
    example_good="rentcheck check   ->  All checks passed (12 files checked)",
    fix="Give the gate what the finding names (the files, steps, box or job it must see); "
    "each gate's row in the gate table says what it must have seen.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

ORDER_RULES: tuple[Rule, ...] = (
    PREREQUISITE_MISSING,
    PREREQUISITE_STALE,
    PREREQUISITE_FAILED,
    PREREQUISITE_FORCED,
    NO_EVIDENCE,
)

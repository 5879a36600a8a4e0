"""RC9xx: rules about rentcheck's own configuration and directives."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

UNUSED_SUPPRESSION_RULE = Rule(
    code="RC900",
    name="unused-suppression",
    family="meta",
    summary="A `rentcheck: ignore[...]` directive suppresses nothing",
    why=(
        "A suppression outlives the problem it hid: once the script is fixed, the stale "
        "directive stays and silently swallows the next real finding on that line. Keeping "
        "only directives that still match something keeps every exception deliberate."
    ),
    example_bad="cp a b  # rentcheck: ignore[RC101]   (no CRLF on this line)",
    example_good="cp a b",
    fix="Delete the directive, or the codes in it that no longer match a finding.",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

UNKNOWN_CODE_RULE = Rule(
    code="RC901",
    name="unknown-code-in-directive",
    family="meta",
    summary="A suppression directive names a rule code that does not exist",
    why=(
        "A typo in a directive (`RC1O1` for `RC101`) suppresses nothing and hides the fact "
        "that the finding it was meant for is still reported - or, with a prefix, a whole "
        "family you did not mean to silence."
    ),
    example_bad="# rentcheck: ignore[RC1O1]",
    example_good="# rentcheck: ignore[RC101]",
    fix="Use a code listed by `rentcheck rules`, or a family prefix such as `RC1`.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

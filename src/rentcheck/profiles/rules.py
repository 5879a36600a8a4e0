"""RC7xx: platform profiles (format), verified-stamp staleness, and cited sources."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = ["RULES", "RULES_BY_CODE"]

_FAMILY = "profiles"

INVALID_FRONTMATTER = Rule(
    code="RC701",
    name="invalid-profile-frontmatter",
    family=_FAMILY,
    summary="A profile's YAML frontmatter breaks the profile schema",
    why=(
        "The audit and teardown gates act on the frontmatter: which tier the meter-stop "
        "action deletes, where checkpoints must live, how long a spot warning lasts. A string "
        "where a boolean belongs ('host-dependent'), a tier name that does not exist, or a "
        "tier marked destroyed that the action's destroys list forgets, turns into a wrong "
        "answer about the person's data at the worst moment."
    ),
    example_bad="tiers:\n  - name: data-disk\n    survives_meter_stop: host-dependent",
    example_good="tiers:\n  - name: data-disk\n    survives_meter_stop: null   # unknown",
    fix=(
        "Correct the key named in the message; unknown facts are null, never placeholder "
        "strings. The schema is rentcheck/resources/profile.schema.json."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

SECTIONS_OUT_OF_ORDER = Rule(
    code="RC702",
    name="profile-sections-out-of-order",
    family=_FAMILY,
    summary="A profile lacks one of the eight sections, repeats one, or has them out of order",
    why=(
        "People read a profile under pressure, right before they stop a meter. Every profile "
        "has the same eight sections in the same order (LAUNCH, STORAGE, NETWORK, "
        "INTERRUPTION + RESUME, TEARDOWN + BILLING, DETACH, GOTCHAS, OVERRIDES), so the "
        "teardown facts are always where the reader expects them and none is forgotten."
    ),
    example_bad="## STORAGE\n...\n## LAUNCH\n...",
    example_good="## LAUNCH\n...\n## STORAGE\n...",
    fix="Rename, add or move the level-2 headings so the eight sections appear once, in order.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

UNSTAMPED_MONEY_FACT = Rule(
    code="RC703",
    name="unstamped-money-fact",
    family=_FAMILY,
    summary="A profile states a money- or data-affecting fact without a verified stamp",
    why=(
        "Prices, billing rules and what a stop deletes change without notice. A fact with a "
        "`verified <source> YYYY-MM` stamp can be re-checked and ages visibly; a bare one is "
        "trusted forever. A list item, table (or the sentence right after it) or paragraph "
        "that talks about billing or deleting data must carry a stamp, or say `(unverified)`."
    ),
    example_bad="- Stopped instances keep billing for the data disk.",
    example_good=(
        "- Stopped instances keep billing for the data disk (verified acme-pricing 2026-06)."
    ),
    fix=(
        "Re-check the fact at its source and add `(verified <source> YYYY-MM)`, naming one of "
        "the frontmatter `sources`; if there is no source, write `(unverified)`."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

UNKNOWN_STAMP_SOURCE = Rule(
    code="RC704",
    name="unknown-stamp-source",
    family=_FAMILY,
    summary="A profile stamp names no source, or one the frontmatter `sources` do not list",
    why=(
        "A stamp is only re-checkable if its source can be found: `--check-sources` fetches "
        "the frontmatter `sources` URLs, and a stamp whose short name matches none of them "
        "(`verified runpod-pricnig 2026-06`) or has no name at all cannot be traced back to "
        "the page that has to be read again."
    ),
    example_bad="(verified 2026-06)",
    example_good="(verified runpod-pricing 2026-06)   # sources: https://docs.runpod.io/pods/pricing",
    fix=(
        "Name the source with words that all occur in one of the frontmatter `sources` URLs, "
        "or add the URL to `sources`."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

STALE_STAMP = Rule(
    code="RC710",
    name="stale-verified-stamp",
    family=_FAMILY,
    summary="A `verified YYYY-MM` stamp is older than the allowed age (default 6 months)",
    why=(
        "Platforms change prices, deletion clocks and what a stop keeps. A fact last checked "
        "long ago may now be wrong in the direction that costs money or data, and the stamp is "
        "the only signal that it needs reading again. A stamp from 2026-03 with a six-month "
        "limit is fresh through 2026-09 and stale from 2026-10."
    ),
    example_bad="(verified runpod-pricing 2025-01)   # checked in 2026-11",
    example_good="(verified runpod-pricing 2026-10)",
    fix=(
        "Re-read the source, correct the fact if it changed, and update the month; if you "
        "cannot re-check it now, write `(not re-verified since YYYY-MM)` so it counts as "
        "unverified instead of fresh."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

STALE_SOON_STAMP = Rule(
    code="RC711",
    name="stale-soon-verified-stamp",
    family=_FAMILY,
    summary="A `verified YYYY-MM` stamp becomes stale within the warning window",
    why=(
        "A warning before the deadline lets the re-check happen in ordinary time rather than "
        "as a red CI run on an unrelated change. By default a stamp warns in its last fresh "
        "month."
    ),
    example_bad="(verified runpod-pricing 2026-05)   # checked in 2026-11: stale from 2026-12",
    example_good="(verified runpod-pricing 2026-11)",
    fix="Re-check the fact at its source and update the month.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

MALFORMED_STAMP = Rule(
    code="RC712",
    name="malformed-verified-stamp",
    family=_FAMILY,
    summary="A verified stamp's date is not a real YYYY-MM month",
    why=(
        "A stamp the linter cannot read never goes stale: `verified June`, `verified 2026-13` "
        "or `verified 6/2026` look dated to a person but silently escape every age check, "
        "which is exactly how a fact stays unchecked for years."
    ),
    example_bad="(verified runpod-pricing June 2026)",
    example_good="(verified runpod-pricing 2026-06)",
    fix="Write the month as YYYY-MM with a real month (01-12).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

FUTURE_STAMP = Rule(
    code="RC713",
    name="future-verified-stamp",
    family=_FAMILY,
    summary="A verified stamp is dated after today",
    why=(
        "Nobody can have verified a fact next month. A future date is a typo (2062 for 2026) "
        "or a hope, and it would keep the fact looking fresh for far longer than it is."
    ),
    example_bad="(verified runpod-pricing 2027-06)   # checked in 2026-11",
    example_good="(verified runpod-pricing 2026-11)",
    fix="Use the month the fact was actually checked (or pass the right --today).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

NOT_REVERIFIED_STAMP = Rule(
    code="RC714",
    name="not-re-verified-stamp",
    family=_FAMILY,
    summary="A fact is marked `not re-verified since YYYY-MM`: it counts as unverified",
    why=(
        "The date in such a stamp says when the fact was last true to someone's knowledge, "
        "not that it was checked; it must not count as fresh. The note keeps the list of "
        "facts awaiting a re-check visible."
    ),
    example_bad="(not re-verified since 2025-12)",
    example_good="(verified lambda-billing 2026-11)",
    fix="Re-check the fact and replace the stamp with `(verified <source> YYYY-MM)`.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

DATED_CITATION = Rule(
    code="RC715",
    name="dated-citation-without-verified",
    family=_FAMILY,
    summary="A citation carries a month but not the word `verified`",
    why=(
        "`(filesystems doc 2026-06)` may mean the fact was checked then, or that the page is "
        "from then; the linter cannot tell, so it does not age it. Writing `verified` makes "
        "the intent explicit and the fact subject to the staleness check. The severity is "
        "set by `profiles.dated-without-verified` (default note; `off` disables it)."
    ),
    example_bad="(filesystems doc 2026-06)",
    example_good="(verified lambda-filesystems 2026-06)",
    fix="Add the word: `(verified <source> YYYY-MM)`, or drop the month if it is not a check.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

DEAD_SOURCE = Rule(
    code="RC720",
    name="dead-source-link",
    family=_FAMILY,
    summary="A cited source no longer resolves (HTTP 4xx/5xx or DNS failure)",
    why=(
        "When the page a fact was verified against is gone, the fact can no longer be "
        "re-checked where it says, and the platform has often moved or changed the thing it "
        "described. Only reported with `--check-sources`."
    ),
    example_bad="sources:\n  - url: https://docs.example.com/old-pricing   # now 404",
    example_good="sources:\n  - url: https://docs.example.com/pricing",
    fix="Find the current page, re-verify the facts that cite it, and update the URL and month.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

UNREACHABLE_SOURCE = Rule(
    code="RC721",
    name="unreachable-source",
    family=_FAMILY,
    summary="A cited source did not answer (timeout, refused, rate-limited) after retries",
    why=(
        "While other hosts answered, this one did not, so its facts could not be compared "
        "with the page. It may be a passing outage; it is a warning, not an error, and a "
        "later run decides."
    ),
    example_bad="https://slow.example.com/docs   # timed out three times",
    example_good="https://docs.example.com/pricing   # 200",
    fix="Run `rentcheck stale --check-sources` again later; if it persists, find a new source.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

CHANGED_SOURCE = Rule(
    code="RC722",
    name="changed-source",
    family=_FAMILY,
    summary="A cited source's text changed since its fingerprint was recorded",
    why=(
        "The fingerprint (a hash of the page's normalised text) was recorded when the facts "
        "were verified. A different text means prices, clocks or survival rules may have "
        "changed underneath a stamp that still looks fresh."
    ),
    example_bad="https://docs.example.com/pricing   # fingerprint differs from sources.lock.json",
    example_good="https://docs.example.com/pricing   # fingerprint matches",
    fix=(
        "Read the page again, correct and re-stamp the facts that cite it, then run "
        "`rentcheck stale --record-sources` to record the new fingerprint."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

UNRECORDED_SOURCE = Rule(
    code="RC723",
    name="unrecorded-source",
    family=_FAMILY,
    summary="A cited source has no recorded fingerprint, so a change cannot be detected",
    why=(
        "Without a fingerprint in sources.lock.json, `--check-sources` can only tell that the "
        "page answers, not whether it still says what was verified."
    ),
    example_bad="sources.lock.json has no entry for https://docs.example.com/pricing",
    example_good="rentcheck stale --record-sources   # after verifying the facts",
    fix="Verify the facts, then run `rentcheck stale --record-sources` with network access.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

NETWORK_UNAVAILABLE = Rule(
    code="RC724",
    name="sources-not-checked-offline",
    family=_FAMILY,
    summary="`--check-sources` ran without network access, so no source was checked",
    why=(
        "An offline run must not fail because the network is missing, or staleness checks "
        "could not run on a plane or in a sandboxed CI; but it must say that nothing was "
        "checked. With `--require-network` it is an error."
    ),
    example_bad="rentcheck stale --check-sources   # no route to any host",
    example_good="rentcheck stale --check-sources --require-network   # in the weekly CI job",
    fix="Run it where the sources are reachable, or accept the note.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

RULES: tuple[Rule, ...] = (
    INVALID_FRONTMATTER,
    SECTIONS_OUT_OF_ORDER,
    UNSTAMPED_MONEY_FACT,
    UNKNOWN_STAMP_SOURCE,
    STALE_STAMP,
    STALE_SOON_STAMP,
    MALFORMED_STAMP,
    FUTURE_STAMP,
    NOT_REVERIFIED_STAMP,
    DATED_CITATION,
    DEAD_SOURCE,
    UNREACHABLE_SOURCE,
    CHANGED_SOURCE,
    UNRECORDED_SOURCE,
    NETWORK_UNAVAILABLE,
)

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}

"""The RC8xx rules: why the teardown gate refuses to let the meter be stopped."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = [
    "BOX_MANIFEST_UNREADABLE",
    "MANIFEST_CHANGED",
    "METER_STOP_IRREVERSIBLE",
    "METER_STOP_NOT_APPROVED",
    "TEARDOWN_RULES",
    "TEARDOWN_RULES_BY_CODE",
    "VERIFIED_MARKER_MISSING",
]

VERIFIED_MARKER_MISSING = "RC801"
MANIFEST_CHANGED = "RC802"
BOX_MANIFEST_UNREADABLE = "RC803"
METER_STOP_NOT_APPROVED = "RC804"
METER_STOP_IRREVERSIBLE = "RC805"


TEARDOWN_RULES: tuple[Rule, ...] = (
    Rule(
        code=VERIFIED_MARKER_MISSING,
        name="verified-marker-missing",
        summary=(
            "The pulled directory has no readable PULL_VERIFIED.json: the pull was never verified."
        ),
        why=(
            "The marker is written only when every file matched the manifest and passed the "
            "structure, safety and NaN/Inf checks. Without it nothing shows that the local copy "
            "is complete, and stopping the meter may destroy the only good copy of the results."
        ),
        example_bad=(
            "rentcheck teardown --verified results/ ...   # results/PULL_VERIFIED.json absent"
        ),
        example_good="rentcheck verify results/ && rentcheck teardown --verified results/ ...",
        fix="Run `rentcheck verify LOCAL_ROOT` and fix what it reports, then run teardown again.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=MANIFEST_CHANGED,
        name="manifest-changed-since-verify",
        summary=(
            "A file was added or changed on the box since the pull was verified (compared by "
            "content, file by file)."
        ),
        why=(
            "The box was re-read just now: a file the verified copy lacks (typically a later "
            "checkpoint) or whose SHA-256 differs exists only on the box. Stopping the meter "
            "would destroy the only copy of it. A rebuilt roster with the same content (a new "
            "run id) is no change and passes."
        ),
        example_bad="ckpt/step_9000.pt: added on the box since the pull (5 GB)",
        example_good="box now: 0 added, 0 changed since the pull",
        fix="Pull again (`rentcheck pull HOST:REMOTE_ROOT LOCAL_ROOT` resumes), then teardown.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=BOX_MANIFEST_UNREADABLE,
        name="box-manifest-unreadable",
        summary="The box could not be re-read now (unreachable, or --manifest-now invalid).",
        why=(
            "Teardown must compare the box as it is now with what was verified. A box that "
            "cannot be read, or a manifest file that cannot be parsed, is no evidence about "
            "the box, so the comparison cannot pass."
        ),
        example_bad="--manifest-now /tmp/now.json   # empty file: the copy from the box failed",
        example_good="rentcheck teardown --host mybox --verified results/ --profile runpod",
        fix="Make the box reachable (or rebuild the manifest there) and run teardown again.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=METER_STOP_NOT_APPROVED,
        name="meter-stop-not-approved",
        summary=(
            "Everything checks out, but the person has not approved the platform's meter-stop "
            "action (--approve)."
        ),
        why=(
            "Stopping the meter is the one step that cannot be taken back on most platforms: "
            "terminate and destroy delete disks. rentcheck states the action and what it "
            "deletes, and passes only after a person has read that and said yes."
        ),
        example_bad=("rentcheck teardown --host mybox --verified results/ --profile runpod"),
        example_good=(
            "rentcheck teardown --host mybox --verified results/ --profile runpod --approve"
        ),
        fix="Read the meter-stop action and what it destroys, then rerun with --approve (or "
        "type the platform's verb when asked on a terminal).",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=METER_STOP_IRREVERSIBLE,
        name="meter-stop-irreversible",
        summary="The platform's meter-stop action cannot be undone (or its fate is unknown).",
        why=(
            "After terminate/destroy/release there is no instance to go back to: anything not "
            "pulled and verified is gone. This note keeps that fact in the record of every "
            "teardown on such a platform, even an approved one."
        ),
        example_bad="runpod: terminate deletes container-disk and volume-disk",
        example_good="autodl: shutdown (关机) keeps every disk for 15 days",
        fix="Nothing to fix; make sure everything you need was in the verified pull.",
        family="teardown",
        default_severity=Severity.NOTE,
        fix_applicability=Applicability.NONE,
    ),
)

TEARDOWN_RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in TEARDOWN_RULES}

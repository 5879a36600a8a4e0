"""The RC8xx rules: why the teardown gate refuses to let the meter be stopped."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = [
    "BOX_MANIFEST_UNREADABLE",
    "BOX_RECORD_UNPROVED",
    "BOX_WRITER_RUNNING",
    "LAUNCHED_JOB_RUNNING",
    "MANIFEST_CHANGED",
    "METER_STOP_IRREVERSIBLE",
    "METER_STOP_NOT_APPROVED",
    "RECORDED_PATH_NOT_PULLED",
    "TEARDOWN_RULES",
    "TEARDOWN_RULES_BY_CODE",
    "VERIFIED_MARKER_MISSING",
]

VERIFIED_MARKER_MISSING = "RC801"
MANIFEST_CHANGED = "RC802"
BOX_MANIFEST_UNREADABLE = "RC803"
METER_STOP_NOT_APPROVED = "RC804"
METER_STOP_IRREVERSIBLE = "RC805"
LAUNCHED_JOB_RUNNING = "RC806"
RECORDED_PATH_NOT_PULLED = "RC807"
BOX_RECORD_UNPROVED = "RC808"
BOX_WRITER_RUNNING = "RC809"


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
    Rule(
        code=LAUNCHED_JOB_RUNNING,
        name="launched-job-still-running",
        summary=(
            "A job that `rentcheck launch` started on this box (the ledger says so) is still "
            "alive: it can write another checkpoint after the pull."
        ),
        why=(
            "The box was re-read now, but a job that is still running writes after that read: "
            "the next checkpoint lands seconds later and the meter stop destroys it. The job is "
            "judged by its pid, its start time and its process group on the box, as watch does."
        ),
        example_bad="job train (pid 4242) launched on mybox is still running",
        example_good="1 launched job(s) proved ended on the box",
        fix="Wait for the job to finish (`rentcheck watch --host HOST --session SESSION`) or "
        "stop it (`ssh HOST kill -TERM -- -PGID`), then pull again and rerun teardown.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=RECORDED_PATH_NOT_PULLED,
        name="recorded-path-not-pulled",
        summary=(
            "A place rentcheck recorded for this box (a launch's --ckpt-dir, the checkpoint "
            "directory or newest checkpoint a watch saw there) lies outside the verified "
            "pull's root: the verified copy does not cover it."
        ),
        why=(
            "Teardown compares the box with the verified copy under the pulled root only. A "
            "checkpoint directory elsewhere on the box was never pulled nor compared, and the "
            "meter stop destroys it with everything else on the box."
        ),
        example_bad=(
            "rentcheck launch --ckpt-dir /ckpt ... ; rentcheck pull mybox:/root/run results/"
        ),
        example_good="rentcheck pull mybox:/root/run results/   # --ckpt-dir /root/run/ckpt",
        fix="Pull a root that holds both the run and that directory (`rentcheck pull "
        "HOST:COMMON_PARENT LOCAL_ROOT`), then `rentcheck teardown --verified LOCAL_ROOT`.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=BOX_RECORD_UNPROVED,
        name="box-record-unproved",
        summary=(
            "Something rentcheck recorded about this box (a launched job, a checkpoint "
            "directory) could not be checked on the box now: unknown is not a pass."
        ),
        why=(
            "A job whose state could not be read may still be writing; a directory that could "
            "not be resolved may hold the newest checkpoint. Teardown passes only on proof, "
            "and --manifest-now carries no proof about processes."
        ),
        example_bad="rentcheck teardown --manifest-now now.json ...   # a job was launched there",
        example_good="rentcheck teardown --host mybox --verified results/ --profile runpod",
        fix="Make the box reachable and run teardown with --host HOST, so rentcheck can ask "
        "it whether the job ended and where the directory is.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=BOX_WRITER_RUNNING,
        name="box-writer-running",
        summary=(
            "A process on the box holds a file under the pulled root open for writing, "
            "whoever started it."
        ),
        why=(
            "A job started by hand (nohup, a notebook, a second tmux window) is in no ledger, "
            "but while it has a file under the root open to write, that file can change after "
            "the box was re-read: the copy is not final. The box's /proc says which process "
            "holds which file."
        ),
        example_bad="pid 5150 (python) has run/train.log open for writing",
        example_good="no process holds a file under the pulled root open for writing",
        fix="Wait for the process to finish, or stop it (`ssh HOST kill -TERM PID`), then "
        "pull again and rerun teardown.",
        family="teardown",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
)

TEARDOWN_RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in TEARDOWN_RULES}

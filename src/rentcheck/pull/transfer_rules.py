"""RC540-RC542: why ``rentcheck pull`` refused, or could not finish, a transfer.

The pull gate's rules are the verify rules (a pull ends with a verify) plus these.
"""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity
from rentcheck.pull.rules import PULL_RULES

__all__ = [
    "CHANGED_DURING_PULL",
    "LOCAL_DISK_FULL",
    "PULL_GATE_RULES",
    "PULL_INCOMPLETE",
    "ROSTER_UNSAFE",
    "TRANSFER_RULES",
    "TRANSFER_RULES_BY_CODE",
]

ROSTER_UNSAFE = "RC540"
CHANGED_DURING_PULL = "RC541"
PULL_INCOMPLETE = "RC542"
LOCAL_DISK_FULL = "RC543"

TRANSFER_RULES: tuple[Rule, ...] = (
    Rule(
        code=ROSTER_UNSAFE,
        name="pull-roster-unsafe",
        summary=(
            "The roster the box sent names a path that would be written outside LOCAL_ROOT "
            "(`..`, an absolute path, a symlink on the way) or is no valid roster."
        ),
        why=(
            "The box is not trusted: a compromised or confused box can send a roster naming "
            "`../../.ssh/authorized_keys` or a path through a symlink that leads out of the "
            "pulled folder. Pulling such a roster would overwrite files on your machine, so it "
            "is refused before the first byte is written."
        ),
        example_bad='{"files": [{"path": "../.bashrc", ...}]}   # or LOCAL_ROOT/ckpt -> /etc',
        example_good='{"files": [{"path": "ckpt/step_1000.pt", ...}]}',
        fix="Look at the box (who wrote that roster?) and at LOCAL_ROOT's symlinks; pull into "
        "an empty LOCAL_ROOT.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=CHANGED_DURING_PULL,
        name="changed-during-pull",
        summary="A file changed (or vanished) on the box while it was being pulled.",
        why=(
            "A file still being written (the run goes on, a save in progress) is copied half "
            "old, half new. rentcheck compares size and mtime on the box before and after, "
            "pulls a changed file again, and reports it when it keeps changing: its local copy "
            "is not a copy of anything the box holds."
        ),
        example_bad="ckpt/last.pt: 1.2 GB, mtime 10:02:11 before; 1.3 GB, 10:04:40 after",
        example_good="every file has the same size and mtime before and after the pull",
        fix="Stop the job writing there (or wait for it to finish), then run the pull again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=PULL_INCOMPLETE,
        name="pull-incomplete",
        summary="The transfer did not finish: every retry failed before the deadline.",
        why=(
            "A pull that stopped part-way leaves files missing or short. What was received is "
            "kept, so the next run continues from there instead of starting over."
        ),
        example_bad="rsync exit 255: connection closed (3 tries, deadline 6h passed)",
        example_good="pull: 12 files, 9.4 GB, one try",
        fix="Check the box is reachable, then run the same pull again: it resumes.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=LOCAL_DISK_FULL,
        name="local-disk-full",
        summary="LOCAL_ROOT's disk has less free space than the pull needs.",
        why=(
            "A full disk is no dropped link: retrying it for the whole deadline only hides "
            "it. It is checked before the first byte (what is still to come, whole files "
            "twice as they land beside their old copy) and, when the disk fills meanwhile, "
            "named at once. What arrived is kept and nothing is marked verified."
        ),
        example_bad="LOCAL_ROOT has 3.1 GB free, this pull needs 9.4 GB more",
        example_good="pull: 12 files, 9.4 GB, one try",
        fix="Free space on LOCAL_ROOT's disk (or pull to a larger one), then run the same "
        "pull again: it resumes.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
)

TRANSFER_RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in TRANSFER_RULES}

#: the pull and verify gates' rules (one tuple: each code is defined once)
PULL_GATE_RULES: tuple[Rule, ...] = (*PULL_RULES, *TRANSFER_RULES)

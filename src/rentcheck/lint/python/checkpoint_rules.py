"""RC201 nonatomic-torch-save, RC203 torch-load-without-weights-only, RC205 no-resume-on-startup."""

from __future__ import annotations

from rentcheck.lint.python.common import python_check
from rentcheck.model import Applicability, Rule, RuleStatus, Severity

NONATOMIC_RULE = Rule(
    code="RC201",
    name="nonatomic-torch-save",
    family="python",
    summary="Checkpoint saved straight onto its final path (no temp file + os.replace)",
    why=(
        "`torch.save(state, 'ckpt/last.pt')` truncates the old checkpoint first and writes "
        "the new one over several seconds. A preemption, an OOM kill or a full disk in that "
        "window leaves a half-written file under the final name, and the next start "
        "dutifully loads it: `PytorchStreamReader failed reading zip archive` or, worse, "
        "silently wrong weights, with the previous good checkpoint already gone."
    ),
    example_bad="torch.save(state, path)",
    example_good=(
        'tmp = f"{path}.tmp-{os.getpid()}"\ntorch.save(state, tmp)\n'
        "os.replace(tmp, path)  # atomic on POSIX; fsync the file and dir for durability"
    ),
    fix="Save to a temporary file in the same directory, then `os.replace(tmp, path)`.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

LOAD_RULE = Rule(
    code="RC203",
    name="torch-load-without-weights-only",
    family="python",
    summary="`torch.load` without an explicit `weights_only`",
    why=(
        "What `torch.load(path)` does depends on the torch on the box. Before 2.6 it "
        "unpickles arbitrary objects, which can run arbitrary code: a checkpoint pulled from "
        "a shared disk, a hub or another tenant's box is a program. From 2.6 on it defaults "
        "to `weights_only=True` and refuses anything but tensors and plain containers, so a "
        "full training state (an argparse Namespace, numpy RNG state) that the same code "
        "saved fails at resume with `UnpicklingError: Weights only load failed`, after the "
        "box is rented. Saying which one you mean makes the line behave the same everywhere."
    ),
    example_bad='state = torch.load("ckpt.pt")',
    example_good=(
        'weights = torch.load("hub_weights.pt", weights_only=True, map_location="cpu")\n'
        'state = torch.load("own_ckpt.pt", weights_only=False)  # our own full-state file'
    ),
    fix=(
        "Pass `weights_only=True` for files you did not write (store only tensors, numbers, "
        "strings, lists and dicts), `weights_only=False` for your own full-state checkpoint."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

RESUME_RULE = Rule(
    code="RC205",
    name="no-resume-on-startup",
    family="python",
    summary="Entrypoint saves checkpoints but never loads one",
    why=(
        "A training script that writes checkpoints but never reads them on start restarts "
        "from step 0 after every preemption, crash or relaunch: the checkpoints only cost "
        "disk and time. On spot or hourly boxes a restart is routine, so the entrypoint "
        "should always look for the latest valid checkpoint and continue from it."
    ),
    example_bad=(
        "def main():\n    for step in range(steps):\n        ...\n        torch.save(state, path)"
    ),
    example_good=(
        "def main():\n    state = load_latest(ckpt_dir)  # None on a fresh start\n"
        "    start = state['step'] + 1 if state else 0"
    ),
    fix="Load the newest valid checkpoint unconditionally at startup and continue from it.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
    status=RuleStatus.PREVIEW,
)


NONATOMIC = python_check(NONATOMIC_RULE, "checkpoint_checks", "nonatomic")
LOAD = python_check(LOAD_RULE, "checkpoint_checks", "load")
NO_RESUME = python_check(RESUME_RULE, "checkpoint_checks", "no_resume")

TRACKER_RULE = Rule(
    code="RC206",
    name="checkpoint-tracker-written-in-place",
    family="python",
    summary="The file naming the latest checkpoint is rewritten in place (`open(…, 'w')`)",
    why=(
        "`open(tracker, 'w')` empties the file the moment it opens, and the new step number "
        "reaches it only at the write and close. A preemption or kill in between leaves a "
        "tracker (`latest`, `latest_checkpointed_iteration.txt`) that is empty or cut short "
        "although every checkpoint directory is intact: the relaunch reads nothing where "
        "the step should be, and `int('')` crashes the resume, or a loader that takes an "
        "unreadable tracker for 'no checkpoint yet' starts again from step 0 (or, taking it "
        "for 'finished', exits 0 without training)."
    ),
    example_bad='with open(os.path.join(out, "latest"), "w") as f:\n    f.write(str(step))',
    example_good=(
        'tmp = os.path.join(out, f"latest.tmp-{os.getpid()}")\nwith open(tmp, "w") as f:\n'
        "    f.write(str(step))\nos.replace(tmp, os.path.join(out, 'latest'))"
    ),
    fix="Write the tracker to a temporary file in the same directory, then `os.replace` it.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

TRACKER = python_check(TRACKER_RULE, "tracker_checks", "tracker_in_place")

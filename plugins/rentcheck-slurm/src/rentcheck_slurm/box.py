"""The SLR1xx rules: what the audit measured on a cluster node, and what the audit left unchecked.

SLR101 is a box rule (``rentcheck.box_rule``): a pure function of the audit probe's facts.
SLR102 is a gate rule (``rentcheck.gate_rule``) on the audit gate's outcome. Both are judged by
``[tool.rentcheck.audit]`` like the built-in RC3xx rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rentcheck import Applicability, BoxFacts, Finding, GateOutcome, Rule, Severity

__all__ = ["BOX_RULES", "CHECKPOINT_ROLES", "check_audit_outcome", "check_node_local_path"]

# The audit path roles that hold what a requeued job must find again.
CHECKPOINT_ROLES = ("checkpoint", "checkpoints", "ckpt", "durable")
# Filesystems that live on one node: its RAM or its own disks (an overlay is a container's
# root). A shared filesystem (nfs, lustre, gpfs, beegfs, cephfs, ...) is silent, and so is a
# type this list does not know: unknown is not "node-local".
NODE_LOCAL_FS = frozenset(
    ("tmpfs", "ramfs", "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "overlay")
)

NODE_LOCAL_PATH = Rule(
    code="SLR101",
    name="checkpoint-path-on-node-local-filesystem",
    summary="The audited checkpoint (or durable) path is on a filesystem of this node alone.",
    why=(
        "A Slurm job that is requeued (preemption, node failure, `--requeue`) or resubmitted "
        "after its time limit starts again on whichever node is free. Checkpoints written to "
        "one node's RAM (tmpfs) or local disk (ext4, xfs, ...) are not there: the job starts "
        "from step 0, or, with a per-job `$TMPDIR`, finds nothing even on the same node."
    ),
    example_bad="[tool.rentcheck.audit.paths] checkpoint = '/tmp/ckpt'   # tmpfs or local ext4",
    example_good="[tool.rentcheck.audit.paths] checkpoint = '/scratch/$USER/ckpt'   # lustre",
    fix=(
        "Write checkpoints to the cluster's shared filesystem (home, project or scratch: nfs, "
        "lustre, gpfs, beegfs, cephfs) and point the job's checkpoint directory there."
    ),
    family="slurm",
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)

NO_CHECKPOINT_PATH = Rule(
    code="SLR102",
    name="audit-checked-no-checkpoint-path",
    summary="The audit measured no checkpoint or durable path, so nothing showed it is shared.",
    why=(
        "Whether a requeued job finds its checkpoints depends only on where they are written. "
        "An audit that was given no `checkpoint` or `durable` path measured the node's disks "
        "but not that one, so SLR101 could not run: a clean audit says nothing about it."
    ),
    example_bad="rentcheck audit --host login1",
    example_good="rentcheck audit --host login1 --path checkpoint=/scratch/$USER/ckpt",
    fix=(
        "Name the job's checkpoint directory: `--path checkpoint=DIR`, or "
        "[tool.rentcheck.audit.paths] checkpoint = DIR."
    ),
    family="slurm",
    default_severity=Severity.NOTE,
    fix_applicability=Applicability.NONE,
)

BOX_RULES = (NODE_LOCAL_PATH, NO_CHECKPOINT_PATH)


def check_node_local_path(box: BoxFacts) -> Iterator[Finding]:
    """SLR101: each checkpoint-like path whose mount has a node-local filesystem type."""
    for role in CHECKPOINT_ROLES:
        if role not in box.paths:
            continue
        fstype = box.fact("paths", role, "mount", "fstype")
        if fstype not in NODE_LOCAL_FS:
            continue
        mount = box.fact("paths", role, "mount", "mount_point")
        yield NODE_LOCAL_PATH.finding(
            f"{role}={box.paths[role]} is on {fstype} ({mount}), a filesystem of this node "
            "only: a requeued job on another node will not find its checkpoints",
            host=box.host,
            details={"role": role, "fstype": fstype, "mount_point": mount},
        )


def check_audit_outcome(outcome: GateOutcome) -> Iterator[Finding]:
    """SLR102: an audit of a box (its facts are in the outcome) without a checkpoint path."""
    facts = outcome.extras.get("facts")
    if not isinstance(facts, Mapping):
        return  # the box was not probed: nothing was measured, and the gate says why
    paths: Mapping[str, Any] = facts.get("paths") or {}
    if not any(role in paths for role in CHECKPOINT_ROLES):
        measured = ", ".join(sorted(paths)) or "none"
        yield NO_CHECKPOINT_PATH.finding(
            f"the audit measured no checkpoint or durable path (paths: {measured})",
            host=outcome.host,
        )

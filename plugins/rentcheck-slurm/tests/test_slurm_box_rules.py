"""SLR101 (a box rule) and SLR102 (a gate rule on the audit) on the facts an audit probe
returns: node-local filesystems fire, shared ones and unknown types stay silent."""

from __future__ import annotations

from typing import Any

import pytest

from rentcheck import BoxFacts, GateOutcome
from rentcheck_slurm import CHECKS
from rentcheck_slurm.box import BOX_RULES, check_audit_outcome, check_node_local_path


def _facts(fstype: str | None, role: str = "checkpoint") -> dict[str, Any]:
    mount = {"mount_point": "/scratch", "fstype": fstype} if fstype else {}
    return {"paths": {role: {"path": "/scratch/me/ckpt", "mount": mount}}}


@pytest.mark.parametrize(
    ("fstype", "fires"),
    [("tmpfs", True), ("ext4", True), ("xfs", True), ("overlay", True),
     ("lustre", False), ("nfs4", False), ("gpfs", False), ("beegfs", False), ("ceph", False),
     ("fuse.weird", False), (None, False)],
)  # fmt: skip
def test_node_local_filesystems_fire(fstype: str | None, fires: bool) -> None:
    box = BoxFacts(host="n1", facts=_facts(fstype), paths={"checkpoint": "/scratch/me/ckpt"})
    found = list(check_node_local_path(box))
    assert bool(found) is fires
    if fires:
        assert found[0].code == "SLR101" and found[0].host == "n1"
        assert f"checkpoint=/scratch/me/ckpt is on {fstype} (/scratch)" in found[0].message


def test_only_checkpoint_roles_count() -> None:
    box = BoxFacts(host="n1", facts=_facts("tmpfs", "data"), paths={"data": "/scratch/me/ckpt"})
    assert list(check_node_local_path(box)) == []


def test_the_gate_rule_reads_what_the_audit_measured() -> None:
    def outcome(extras: dict[str, Any]) -> GateOutcome:
        return GateOutcome(gate="audit", host="n1", findings=(), extras=extras)

    (note,) = check_audit_outcome(outcome({"facts": _facts("ext4", "data")}))
    assert note.code == "SLR102" and note.message.endswith("(paths: data)")
    assert list(check_audit_outcome(outcome({"facts": _facts("ext4", "durable")}))) == []
    assert list(check_audit_outcome(outcome({}))) == []  # not probed: nothing to say


def test_the_pack_registers_them() -> None:
    rules = [c.rule for c in CHECKS]
    assert set(BOX_RULES) <= set(rules)
    for rule in BOX_RULES:
        assert rule.code.startswith("SLR1") and len(rule.why) >= 80 and rule.fix

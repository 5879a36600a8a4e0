"""rentcheck rules for Slurm clusters (code prefix SLR), registered as the ``slurm`` pack:
file rules on sbatch scripts (SLR0xx), a box rule and a gate rule on the audit (SLR1xx)."""

from __future__ import annotations

from rentcheck import BoxCheck, FileCheck, GateCheck, box_rule, file_rule, gate_rule
from rentcheck_slurm import box, rules

__all__ = ["CHECKS", "FILE_CHECKS"]

# An sbatch script: one of these names, holding an #SBATCH line.
_SCRIPTS = ("*.sbatch", "*.slurm", "*.sh")

FILE_CHECKS = [
    file_rule(rule, check, globs=_SCRIPTS, containing=b"#SBATCH")
    for rule, check in (
        (rules.NO_SIGNAL, rules.check_no_signal),
        (rules.NO_REQUEUE, rules.check_requeue),
        (rules.UNTRAPPED, rules.check_untrapped),
        (rules.MISSES_SHELL, rules.check_misses_shell),
        (rules.FOREGROUND, rules.check_foreground),
        (rules.SHORT_TIME, rules.check_time),
        (rules.NODE_LOCAL, rules.check_node_local),
        (rules.LATE_DIRECTIVE, rules.check_late_directives),
    )
]

CHECKS: list[FileCheck | BoxCheck | GateCheck] = [
    *FILE_CHECKS,
    box_rule(box.NODE_LOCAL_PATH, box.check_node_local_path),
    gate_rule(box.NO_CHECKPOINT_PATH, box.check_audit_outcome, gate="audit"),
]

"""rentcheck rules for sbatch scripts (code prefix SLR), registered as the ``slurm`` pack."""

from __future__ import annotations

from rentcheck import file_rule
from rentcheck_slurm import rules

__all__ = ["CHECKS"]

# An sbatch script: one of these names, holding an #SBATCH line.
_SCRIPTS = ("*.sbatch", "*.slurm", "*.sh")

CHECKS = [
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

"""rentcheck rules for Kubernetes Job and Pod manifests (code prefix KUBE), the ``k8s`` pack."""

from __future__ import annotations

from rentcheck import file_rule
from rentcheck_k8s import rules

__all__ = ["CHECKS"]

_MANIFESTS = ("*.yaml", "*.yml")

CHECKS = [
    file_rule(rule, check, globs=_MANIFESTS, containing=b"kind:")
    for rule, check in (
        (rules.CONTAINER_FS, rules.check_container_fs),
        (rules.EMPTYDIR_RETRY, rules.check_emptydir_retry),
        (rules.SHORT_GRACE, rules.check_short_grace),
        (rules.UNPINNED, rules.check_unpinned),
    )
]

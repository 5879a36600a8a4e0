"""The KUBE rules on real-looking manifests (tests/fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rentcheck import SourceFile
from rentcheck_k8s import CHECKS
from rentcheck_k8s.manifest import workloads
from rentcheck_k8s.rules import RULES

FIXTURES = Path(__file__).parent / "fixtures"

EXPECTED = {
    "good-job.yaml": set(),
    "naive-job.yaml": {("KUBE001", 23), ("KUBE002", 26), ("KUBE003", 14), ("KUBE004", 21)},
    # A bare Pod restarts its container in place: the emptyDir survives, KUBE002 does not apply.
    "pod.yml": {("KUBE003", 9)},
    # backoffLimit: 0 never retries.
    "cronjob.yaml": {("KUBE004", 15)},
    "values.yaml": set(),
    "broken.yaml": set(),
}


def findings_of(name: str) -> set[tuple[str, int | None]]:
    source = SourceFile.read(name, str(FIXTURES / name))
    found = set()
    for check in CHECKS:
        if check.applies(source):
            for finding in check.run(source):
                assert finding.code == check.rule.code, "a check reports its own rule only"
                found.add((finding.code, finding.line))
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_findings(name: str) -> None:
    assert findings_of(name) == EXPECTED[name]


def test_every_fixture_is_listed_and_every_rule_is_exercised() -> None:
    assert {p.name for p in FIXTURES.iterdir()} == set(EXPECTED)
    hit = {code for found in EXPECTED.values() for code, _ in found}
    assert hit == {rule.code for rule in RULES}


def test_rules_carry_full_metadata_with_the_pack_prefix() -> None:
    assert [c.rule for c in CHECKS] == list(RULES)
    for rule in RULES:
        assert rule.code.startswith("KUBE") and len(rule.why) >= 80


def test_documents_keep_their_own_lines() -> None:
    text = (FIXTURES / "naive-job.yaml").read_text()
    (job,) = workloads(text)  # the ConfigMap is not a workload
    assert (job.kind, job.name, job.first_line) == ("Job", "resnet", 9)

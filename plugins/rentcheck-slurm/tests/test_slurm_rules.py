"""The SLR rules on real-looking sbatch scripts (tests/fixtures), and sbatch's own formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from rentcheck import SourceFile
from rentcheck_slurm import FILE_CHECKS as CHECKS
from rentcheck_slurm.rules import RULES
from rentcheck_slurm.script import parse_script, parse_signal, parse_time

FIXTURES = Path(__file__).parent / "fixtures"

EXPECTED = {
    "good.sbatch": set(),
    "naive.sbatch": {("SLR001", 2), ("SLR002", 3), ("SLR006", 8), ("SLR007", 8)},
    "trap_no_b.sbatch": {("SLR004", 7)},
    "foreground.slurm": {("SLR005", 8), ("SLR007", 9)},
    # --requeue and --partition come after `set -e`: sbatch ignores both.
    "untrapped_late.sh": {("SLR003", 3), ("SLR008", 5), ("SLR008", 6)},
    "not_sbatch.sh": set(),
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
        assert rule.code.startswith("SLR") and len(rule.why) >= 80
        assert rule.example_bad.strip() and rule.example_good.strip() and rule.fix.strip()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 7200),  # minutes
        ("90:30", 5430),  # minutes:seconds
        ("04:00:00", 14400),  # hours:minutes:seconds
        ("2-0", 172800),  # days-hours
        ("1-02:30", 95400),  # days-hours:minutes
        ("0-04:00:00", 14400),  # days-hours:minutes:seconds
        ("UNLIMITED", None),
    ],
)
def test_sbatch_time_formats(value: str, seconds: int | None) -> None:
    assert parse_time(value) == seconds


def test_signal_spec_as_sbatch_reads_it() -> None:
    spec = parse_signal("B:USR1@90")
    assert spec is not None and spec.batch_shell and spec.name == "USR1" and spec.lead_seconds == 90
    bare = parse_signal("SIGUSR2")  # no @sig_time: sbatch's default is 60 seconds
    assert bare is not None and not bare.batch_shell and bare.lead_seconds == 60
    numbered = parse_signal("B:10@300")
    assert numbered is not None and numbered.name == "USR1"
    assert parse_signal("USR1@soon") is None


def test_directives_stop_at_the_first_command() -> None:
    script = parse_script("#!/bin/bash\n\n# comment\n#SBATCH -t 5\nhostname\n#SBATCH -p spot\n")
    assert [(d.option, d.value) for d in script.directives] == [("--time", "5")]
    assert script.late_directives == [6]

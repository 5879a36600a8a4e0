"""Data-driven rule cases: every ``tests/fixtures/lint/<CODE>/<case>`` file is checked on its
own and must produce exactly the findings listed in ``<case>.expected`` (``LINE:COL CODE``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set
from tests.conftest import FIXTURES

CASES = sorted(p for p in (FIXTURES / "lint").glob("*/*") if p.suffix != ".expected")


def _expected(case: Path) -> list[str]:
    return sorted(
        line.strip()
        for line in case.with_name(case.name + ".expected").read_text().splitlines()
        if line.strip()
    )


def _findings(case: Path, tmp_path: Path) -> list[str]:
    target = tmp_path / case.name
    shutil.copy2(case, target)  # keeps the mode, which RC103 judges
    # Each directory tests its own rule (preview ones included); the meta rules need the
    # others running to have something to suppress.
    code = case.parent.name
    select = ("ALL",) if code.startswith("RC9") else (code,)
    config = Config(root=str(tmp_path), select=select, preview=code != "RC900")
    linter = Linter(config, load_rule_set(with_plugins=False))
    result = linter.run([str(target)])
    return sorted(f"{f.line}:{f.col} {f.code}" for f in result.findings)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_case(case: Path, tmp_path: Path) -> None:
    assert _findings(case, tmp_path) == _expected(case)


def test_every_bad_case_has_a_good_twin_and_an_expectation() -> None:
    assert CASES, "no fixtures found"
    for case in CASES:
        assert case.with_name(case.name + ".expected").exists(), f"{case} lacks .expected"
        if case.name.startswith("bad_"):
            twin = case.with_name("good_" + case.name[4:])
            assert twin.exists(), f"{case} has no good twin {twin.name}"
            assert _expected(case), f"{case} is a bad case that expects no finding"


def test_every_builtin_file_rule_has_fixtures() -> None:
    rules = load_rule_set(with_plugins=False)
    covered = {p.parent.name for p in CASES}
    for check in rules.file_checks:
        assert check.rule.code in covered, f"{check.rule.code} has no fixture directory"

"""A built-in gate is one row in ``gates/builtin.py`` plus its package: it shows up in the
CLI, ``rentcheck rules``, config validation, pytest, status, the report and the ledger with
no other file edited. The row is added the way an edit of ``builtin.py`` would add it
(before anything reads the table); the package sits on the path like ``gates/<name>/``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = """
from rentcheck import Applicability, Rule, Severity
from rentcheck.gates.judge import GateResult

RULES = (
    Rule(
        code="RC990", name="quota-too-small", family="quota",
        summary="The declared disk quota is below what a checkpoint needs",
        why="A checkpoint that does not fit is a save that fails mid-write.",
        example_bad="quota: {gib: 1}", example_good="quota: {gib: 50}",
        fix="Raise [tool.rentcheck.quota] gib.",
        fix_applicability=Applicability.NONE, default_severity=Severity.ERROR,
    ),
)


def settings(config):
    return {"gib": int(config.section("quota").get("gib", 50))}


def run(config, options):
    gib = settings(config)["gib"]
    found = [RULES[0].finding(f"quota {gib} GiB is below 10")] if gib < 10 else []
    return GateResult("quota", found, extras={"quota": {"gib": gib}}, seen={"quotas": 1})
"""

ROW = """
from rentcheck.gates import builtin
from rentcheck.gates.row import Gate, Proof

builtin.GATES = builtin.GATES + (
    Gate(
        name="quota",
        phase="pre-rent",
        summary="the declared disk quota fits a checkpoint",
        commands=("quota",),
        section="quota",
        section_keys=("gib",),
        rules=("quota_gate", "RULES"),
        runner="quota_gate:run",
        settings="quota_gate:settings",
        proves=(Proof("quotas", "quotas read", "declare [tool.rentcheck.quota] gib"),),
    ),
)
"""


@pytest.fixture
def quota(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    site = tmp_path / "site"
    (site / "quota_gate").mkdir(parents=True)
    (site / "quota_gate" / "__init__.py").write_text(PACKAGE)
    (site / "sitecustomize.py").write_text(ROW)  # stands in for the row edit of builtin.py
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return project, env


def _rc(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_one_row_and_one_package_make_a_built_in_gate(quota: tuple[Path, dict[str, str]]) -> None:
    project, env = quota
    (project / "rentcheck.yaml").write_text("quota:\n  gib: 1\n")
    run = _rc(project, env, "quota")
    assert run.returncode == 1 and "RC990 quota 1 GiB is below 10" in run.stdout, run.stderr
    assert "quota" in _rc(project, env, "--help").stdout
    assert "RC990" in _rc(project, env, "rules").stdout
    assert "save that fails mid-write" in _rc(project, env, "rule", "RC990").stdout
    # config validation: the section is the table's, its keys and codes are checked
    (project / "rentcheck.yaml").write_text("quota:\n  gbi: 1\n")
    typo = _rc(project, env, "quota")
    assert typo.returncode == 2 and "quota.gbi" in typo.stderr, typo.stderr
    (project / "rentcheck.yaml").write_text("quota:\n  gib: 1\n  ignore: [RC999]\n")
    assert _rc(project, env, "quota").returncode == 2
    (project / "rentcheck.yaml").write_text("quota:\n  gib: 50\n")
    assert _rc(project, env, "quota").returncode == 0
    shown = json.loads(_rc(project, env, "config", "--output-format", "json").stdout)
    assert shown["sections"]["quota"]["values"]["gib"]["value"] == 50
    # pytest: one item, judged like the CLI
    (project / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--rentcheck-gate", "quota", "-p", "no:cacheprovider"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rentcheck quota gate: PASSED" in result.stdout
    # status, the report and the ledger
    status = json.loads(_rc(project, env, "status", "--output-format", "json").stdout)
    [row] = [r for r in status["gates"] if r["gate"] == "quota"]
    assert row["state"] == "passed" and row["phase"] == "pre-rent", row
    page = project / "report.html"
    assert _rc(project, env, "report", "--html", str(page)).returncode in (0, 1)
    assert "quota" in page.read_text()
    entries = [
        json.loads(x) for x in (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    assert [(e["gate"], e["verdict"], e["via"]) for e in entries] == [
        ("quota", "fail", "cli"),
        ("quota", "pass", "cli"),
        ("quota", "pass", "pytest"),
    ]

"""A gate added by one table row (a plugin's entry point) shows up everywhere gates are listed:
the CLI, `rentcheck rules`, config validation, `pytest --rentcheck-gate`, status and the ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOY_GATE = """
from rentcheck import Finding, Rule, Severity, Applicability
from rentcheck.gates.judge import GateResult
from rentcheck.gates.table import Gate, Proof

RULES = (
    Rule(
        code="TOY001", name="toy-level-too-low", family="toy",
        summary="The toy level is below what the toy gate needs",
        why="A toy gate exists to prove the gate table: one row is all it takes.",
        example_bad="toy: {level: 1}", example_good="toy: {level: 3}",
        fix="Raise [tool.rentcheck.toy] level.",
        fix_applicability=Applicability.NONE, default_severity=Severity.ERROR,
    ),
)


def run(config, options):
    level = int(config.section("toy").get("level", 3))
    found = []
    if level < 3:
        found.append(Finding("TOY001", Severity.ERROR, f"level {level} is below 3"))
    return GateResult("toy", found, extras={"toy": {"level": level}}, seen={"levels": 1})


def run_blind(config, options):
    return GateResult("blind", [])


GATE = Gate(
    name="toy",
    phase="pre-rent",
    summary="a toy gate from a plugin",
    commands=("toy",),
    section="toy",
    section_keys=("level",),
    rules=("toy_gate", "RULES"),
    runner="toy_gate:run",
    proves=(Proof("levels", "toy levels read", "set [tool.rentcheck.toy] level"),),
)

# A gate that declares nothing and reports nothing: it checked nothing, so it cannot pass.
BLIND = Gate(
    name="blind",
    phase="pre-rent",
    summary="a plugin gate that forgot to say what it saw",
    commands=("blind",),
    runner="toy_gate:run_blind",
)
"""


@pytest.fixture
def toy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    site = tmp_path / "site"
    (site / "toy_gate-1.0.dist-info").mkdir(parents=True)
    (site / "toy_gate-1.0.dist-info" / "entry_points.txt").write_text(
        "[rentcheck.gates]\ntoy = toy_gate:GATE\nblind = toy_gate:BLIND\n"
    )
    (site / "toy_gate.py").write_text(TOY_GATE)
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return project, env


def _rc(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_one_row_makes_a_gate_everywhere(toy: tuple[Path, dict[str, str]]) -> None:
    project, env = toy
    (project / "rentcheck.yaml").write_text("toy:\n  level: 1\n")
    # The CLI: its own command and `rentcheck gate toy`, judged and recorded like any gate.
    run = _rc(project, env, "toy")
    assert run.returncode == 1 and "TOY001 level 1 is below 3" in run.stdout, run.stderr
    assert "toy" in _rc(project, env, "--help").stdout
    assert _rc(project, env, "gate", "toy").returncode == 1
    # rentcheck rules / rule
    assert "TOY001" in _rc(project, env, "rules").stdout
    assert "one row is all it takes" in _rc(project, env, "rule", "TOY001").stdout
    # config validation: its section is known, its keys are checked, its codes selectable
    (project / "rentcheck.yaml").write_text("toy:\n  levle: 1\n")
    typo = _rc(project, env, "toy")
    assert typo.returncode == 2 and "toy.levle" in typo.stderr and "level" in typo.stderr
    (project / "rentcheck.yaml").write_text("toy:\n  level: 1\n  ignore: [TOY001]\n")
    assert _rc(project, env, "toy").returncode == 0
    (project / "rentcheck.yaml").write_text("toy:\n  level: 1\n")
    shown = json.loads(_rc(project, env, "config", "--output-format", "json").stdout)
    assert shown["sections"]["toy"]["values"]["level"]["value"] == 1
    # pytest --rentcheck-gate toy: one item, failing with the finding line
    (project / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--rentcheck-gate", "toy", "-p", "no:cacheprovider"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "<project>: TOY001 level 1 is below 3" in result.stdout
    assert "rentcheck toy gate: FAILED (1 failed)" in result.stdout
    # status and the ledger
    status = json.loads(_rc(project, env, "status", "--output-format", "json").stdout)
    [row] = [r for r in status["gates"] if r["gate"] == "toy"]
    assert row["state"] == "failed" and row["phase"] == "pre-rent"
    entries = [
        json.loads(x) for x in (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    assert [(e["gate"], e["verdict"], e["via"]) for e in entries] == [
        ("toy", "fail", "cli"),
        ("toy", "fail", "cli"),
        ("toy", "pass", "cli"),
        ("toy", "fail", "pytest"),
    ]


def test_a_gate_that_saw_nothing_cannot_pass(toy: tuple[Path, dict[str, str]]) -> None:
    """No evidence, no pass: a row that declares no proof must still have checked a file;
    a runner that reports nothing fails RC914 naming what was missing, in the CLI, in
    pytest and in the ledger alike."""
    project, env = toy
    run = _rc(project, env, "blind")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "RC914" in run.stdout and "the blind gate saw 0 files checked" in run.stdout
    (project / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--rentcheck-gate", "blind", "-p", "no:cacheprovider"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1 and "RC914" in result.stdout, result.stdout
    entries = [
        json.loads(x) for x in (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    assert [(e["gate"], e["verdict"], e["failing"]) for e in entries] == [
        ("blind", "fail", ["RC914"]),
        ("blind", "fail", ["RC914"]),
    ]

"""A plugin's gate rule (``rentcheck.gate_rule``) runs wherever its gate is judged, not only
in the audit: here the lint gate (``rentcheck check``), judged by that gate's selection."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from tests.conftest import run_subprocess

PACK = textwrap.dedent(
    """
    from rentcheck import Applicability, Rule, Severity, gate_rule

    FEW = Rule(
        code="YY101", name="lint-checked-almost-nothing", family="demo",
        summary="The lint gate checked fewer than three files.",
        why="A pre-commit run over a sparse checkout or the wrong directory passes because it "
            "saw nothing; the outcome's own file count says so.",
        example_bad="rentcheck check empty/", example_good="rentcheck check .",
        fix="Run the gate on the project's root.",
        fix_applicability=Applicability.NONE, default_severity=Severity.WARNING,
    )

    def few_files(outcome):
        if outcome.files_checked < 3:
            yield FEW.finding(f"the {outcome.gate} gate checked {outcome.files_checked} files")

    CHECKS = [gate_rule(FEW, few_files, gate="lint")]
    """
)


def test_a_gate_rule_on_the_lint_gate(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "yy_pack-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "yy_pack.py").write_text(PACK)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: yy-pack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rentcheck.rules]\nyy = yy_pack:CHECKS\n")
    env = {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}
    work = tmp_path / "work"
    work.mkdir()
    (work / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work / "run.sh").chmod(0o755)
    proc = run_subprocess("check", "--output-format", "json", ".", cwd=work, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert {r["code"] for r in json.loads(proc.stdout)["results"]} == {"YY101"}
    (hit,) = [r for r in json.loads(proc.stdout)["results"] if r["code"] == "YY101"]
    assert hit["message"] == "the lint gate checked 1 files"
    ignored = run_subprocess("check", "--ignore", "YY101", ".", cwd=work, env=env)
    assert ignored.returncode == 0 and "YY101" not in ignored.stdout
    (work / "a.sh").write_text("echo a\n")
    (work / "b.sh").write_text("echo b\n")
    enough = run_subprocess("check", "--output-format", "json", ".", cwd=work, env=env)
    assert "YY101" not in enough.stdout, enough.stdout

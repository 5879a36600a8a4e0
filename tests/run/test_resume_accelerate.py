"""A plain loop on accelerate (save_state / load_state), judged exactly: bit-equal losses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tinykit import framework_settings

from rentcheck.run.resume import run_resume

pytest.importorskip("accelerate")


def _settings(root: Path, flags: str, overrides: dict[str, Any] | None = None) -> Any:
    return framework_settings(
        root,
        {"train.py": "accelerate_loop/train.py"},
        f'  command: "python train.py --steps {{steps}} --every {{checkpoint_every}}{flags}"\n'
        "  timeout: 180\n",
        overrides,
    )


def test_save_state_and_load_state_resume_exactly(tmp_path: Path) -> None:
    outcome = run_resume(_settings(tmp_path / "good", ""), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    by_name = {s["scenario"]: s for s in outcome.judgement.scenarios}
    assert [
        (s["durable_checkpoint_step"], s["relaunch_first_step"], s["first_mismatch"])
        for s in by_name.values()
    ] == [(4, 5, None), (8, 9, None), (4, 5, None)]
    # save_state writes step_8/ in place: the cut left a partial step_8 that the loader
    # skipped (no `done` marker), so it is only a note.
    assert [f.code for f in outcome.findings] == ["RC633"]


def test_a_scheduler_left_out_of_prepare_fails_with_that_cause(tmp_path: Path) -> None:
    overrides = {"signals": ["SIGKILL"], "kill-during-save": False}
    settings = _settings(tmp_path / "bad", " --forget-scheduler", overrides)
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert not outcome.passed
    assert outcome.findings[0].code == "RC623", outcome.verdict_lines()
    assert "optimizer or LR scheduler state not restored" in outcome.findings[0].message


def test_accelerate_launch_resolves_to_the_projects_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`accelerate launch train.py` as typed: the environment's bin goes first on PATH (as
    `activate` does), so its `accelerate` runs even when the shell's PATH lacks it."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the environment under test is found through $VIRTUAL_ENV: run in a venv")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    settings = framework_settings(
        tmp_path / "launch",
        {"train.py": "accelerate_loop/train.py"},
        '  command: "accelerate launch --cpu --num_processes 1 --num_machines 1 --mixed_precision'
        ' no --dynamo_backend no train.py --steps {steps} --every {checkpoint_every}"\n'
        "  timeout: 180\n",
        {"signals": ["SIGKILL"], "kill-during-save": False},
    )
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.reference.shim.active  # the launcher's child python loaded the shim
    scenario = outcome.judgement.scenarios[0]
    assert (scenario["durable_checkpoint_step"], scenario["relaunch_first_step"]) == (4, 5)

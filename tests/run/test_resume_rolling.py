"""A trainer with one rolling checkpoint (ckpt/last.pt, replaced atomically) can be tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinykit import framework_settings

from rentcheck.run.resume import run_resume


def _settings(root: Path, args: str, overrides: dict[str, Any] | None = None) -> Any:
    # No checkpoint-dir: the shim's events say where and when checkpoints were published.
    return framework_settings(
        root,
        {"train.py": "rolling_trainer/train.py"},
        f'  command: "python train.py --steps {{steps}} --every {{checkpoint_every}}{args}"\n'
        "  timeout: 120\n",
        overrides,
    )


def test_a_rolling_last_pt_that_resumes_correctly_passes(tmp_path: Path) -> None:
    outcome = run_resume(_settings(tmp_path / "good", ""), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    by_name = {s["scenario"]: s for s in outcome.judgement.scenarios}
    # Killed at 6 after last.pt held step 4; killed again at 10 (the relaunch's own 6th step)
    # after it held step 8; killed mid-save of step 8's temp file: last.pt still held step 4.
    assert [
        (s["killed_after_step"], s["durable_checkpoint_step"], s["relaunch_first_step"])
        for s in by_name.values()
    ] == [(6, 4, 5), (10, 8, 9), (8, 4, 5)]
    assert Path(by_name["SIGKILL during a checkpoint write"]["cut_file"]).name == "last.pt.tmp"
    assert outcome.reference.ckpt_dir.endswith("/ckpt")  # found from the events


def test_a_rolling_last_pt_trainer_that_resets_its_step_fails(tmp_path: Path) -> None:
    overrides = {"signals": ["SIGKILL"], "kill-during-save": False}
    settings = _settings(tmp_path / "bad", " --forget-step", overrides)
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert not outcome.passed
    assert outcome.findings[0].code == "RC620", outcome.verdict_lines()
    assert "never loaded it" in outcome.findings[0].message

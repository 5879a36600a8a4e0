"""transformers' Trainer, resumed from get_last_checkpoint(output_dir) as its docs show, with
the hf-trainer preset (HfArgumentParser scripts) and hf-trainer-argparse (own flags)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tinykit import framework_settings

from rentcheck.run.resume import run_resume

pytest.importorskip("transformers")


def _settings(root: Path, config: str, overrides: dict[str, Any] | None = None) -> Any:
    files = {name: f"hf_trainer/{name}" for name in ("train.py", "train_argparse.py")}
    return framework_settings(root, files, "  timeout: 300\n" + config, overrides)


HF_ARGS = (
    '  command: "python train.py --per_device_train_batch_size 8{extra}"\n  preset: hf-trainer\n'
)


def test_get_last_checkpoint_resumes_but_crashes_on_a_checkpoint_cut_mid_save(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path / "p", HF_ARGS.format(extra=""))
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    by_name = {s["scenario"]: s for s in outcome.judgement.scenarios}
    for name in ("SIGKILL between checkpoints", "SIGTERM between checkpoints"):
        assert by_name[name]["relaunch_first_step"] == by_name[name]["durable_checkpoint_step"] + 1
    # The kill in the middle of checkpoint-8's first file leaves a partial checkpoint-8 that
    # get_last_checkpoint picks: the relaunch crashes, a real finding.
    assert [f.code for f in outcome.findings] == ["RC626"], outcome.verdict_lines()
    assert "checkpoint-8" in by_name["SIGKILL during a checkpoint write"]["cut_file"]
    assert by_name["SIGKILL during a checkpoint write"]["durable_checkpoint_step"] == 4


def test_a_loader_that_skips_incomplete_checkpoints_only_gets_a_note(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path / "p",
        HF_ARGS.format(extra=" --skip_incomplete true"),
        {"signals": [], "kill-during-save": True},
    )
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert [(f.code, f.severity.label) for f in outcome.findings] == [("RC633", "note")]
    scenario = outcome.judgement.scenarios[0]
    assert scenario["durable_checkpoint_step"] == 4 and scenario["relaunch_first_step"] == 5


def test_an_argparse_trainer_script_takes_no_preset_flags_and_resumes(tmp_path: Path) -> None:
    config = (
        '  command: "python train_argparse.py --steps {steps} --save-every {checkpoint_every}"\n'
        "  preset: hf-trainer-argparse\n"
    )
    settings = _settings(
        tmp_path / "p", config, {"signals": ["SIGKILL"], "kill-during-save": False}
    )
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    scenario = outcome.judgement.scenarios[0]
    assert scenario["durable_checkpoint_step"] == 4 and scenario["relaunch_first_step"] == 5

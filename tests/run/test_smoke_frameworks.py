"""`rentcheck smoke` on real Lightning and transformers Trainer projects, commands as typed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tinykit import FIXTURES, project_config

from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke


def _project(root: Path, source: str, smoke: str) -> Path:
    root.mkdir()
    shutil.copy(FIXTURES / source, root / "train.py")
    (root / "rentcheck.yaml").write_text("smoke:\n  timeout: 240\n" + smoke)
    return root


def test_a_lightning_trainer_is_stopped_after_two_optimizer_steps(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    root = _project(
        tmp_path / "l", "lightning_trainer/train.py", '  command: "python train.py --every 1"\n'
    )
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.ended_by == "stopped by rentcheck after 2 optimizer steps"
    assert not (root / "checkpoints").exists()  # its checkpoint went into the copy


def test_an_hf_trainer_script_with_the_preset_runs_its_steps(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    root = _project(
        tmp_path / "h",
        "hf_trainer/train.py",
        '  command: "python train.py --per_device_train_batch_size 8"\n  preset: hf-trainer\n',
    )
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.observed_steps == 2 and outcome.shim.active
    # --save_steps 1 in the preset: the first checkpoint was written (and seen) in the smoke.
    assert any(s.get("ok") for s in outcome.shim.saves)
    assert not (root / "out").exists()

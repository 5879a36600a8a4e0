"""Presets keep the command as typed: limits go in-process where the script would reject
flags, and LightningCLI's smoke writes its config.yaml into a dir of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from tinykit import FIXTURES, project_config

from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke


def _project(root: Path, files: dict[str, str], smoke: str) -> Path:
    root.mkdir()
    for name, source in files.items():
        (root / name).write_bytes((FIXTURES / source).read_bytes())
    (root / "rentcheck.yaml").write_text("smoke:\n" + smoke)
    return root


def test_the_hf_trainer_preset_on_an_argparse_script_adds_no_flag(tmp_path: Path) -> None:
    """train_argparse.py builds TrainingArguments from its own argparse (12 steps by default):
    `--max_steps 2 ...` would be 'unrecognized arguments'. The shim sets the fields instead,
    so the Trainer itself ends after `steps`."""
    pytest.importorskip("transformers")
    files = {name: f"hf_trainer/{name}" for name in ("train.py", "train_argparse.py")}
    smoke = '  command: "python train_argparse.py"\n  preset: hf-trainer\n  timeout: 240\n'
    settings = smoke_settings(project_config(_project(tmp_path / "hf", files, smoke)))
    assert settings.preset == "hf-trainer-argparse"
    assert [a for a in settings.argv if a.startswith("--")] == []
    assert '"max_steps": 2' in settings.shim_limits["RENTCHECK_SHIM_TRAINING_ARGS"]
    outcome = run_smoke(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    # max_steps=2 reached the Trainer: it ended by itself, not by the shim's stop.
    assert outcome.ended_by == "exited on its own (exit 0)"
    assert outcome.shim.steps == 2


def test_lightning_cli_smoke_with_a_config_yaml_in_the_project(tmp_path: Path) -> None:
    """SaveConfigCallback aborts when config.yaml exists where it writes (the cwd without a
    logger); the preset gives the smoke its own default_root_dir."""
    pytest.importorskip("lightning")
    pytest.importorskip("jsonargparse")
    files = {
        "main.py": "lightning_cli/main.py",
        "config.yaml": "lightning_cli/tiny.yaml",
        "train.py": "lightning_trainer/train.py",
    }
    smoke = '  command: "python main.py fit --config config.yaml"\n  preset: lightning-cli\n'
    settings = smoke_settings(
        project_config(_project(tmp_path / "cli", files, smoke + "  timeout: 240\n"))
    )
    outcome = run_smoke(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.observed_steps == 2

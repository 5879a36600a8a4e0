"""Lightning's Trainer, resumed with fit(ckpt_path="last"): its saves go through a buffer and
a temp file renamed into place, and its mid-epoch resume is not bit-exact by design."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tinykit import framework_settings

from rentcheck.run.resume import run_resume

pytest.importorskip("lightning")


def _settings(root: Path, args: str) -> Any:
    return framework_settings(
        root,
        {"train.py": "lightning_trainer/train.py"},
        f'  command: "python train.py --max-steps {{steps}} --every {{checkpoint_every}}{args}"\n'
        "  mode: continues\n"
        "  timeout: 180\n",
    )


def test_a_lightning_trainer_that_resumes_from_last_passes(tmp_path: Path) -> None:
    outcome = run_resume(_settings(tmp_path / "good", ""), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    by_name = {s["scenario"]: s for s in outcome.judgement.scenarios}
    # Every scenario ran: the buffered saves were seen, the kills landed, the relaunches
    # continued after the newest complete checkpoint.
    kill = by_name["SIGKILL between checkpoints"]
    assert (kill["killed_after_step"], kill["durable_checkpoint_step"]) == (6, 4)
    assert kill["relaunch_first_step"] == 5
    cut = by_name["SIGKILL during a checkpoint write"]
    assert cut["durable_checkpoint_step"] == 4 and cut["relaunch_first_step"] == 5
    assert outcome.judgement.source == "shim"


def test_a_lightning_trainer_that_never_loads_its_checkpoint_fails(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "bad", " --no-resume")
    outcome = run_resume(replace(settings, kill_during_save=False, signals=settings.signals[:1]))
    assert not outcome.passed
    assert outcome.findings[0].code == "RC620", outcome.verdict_lines()
    assert "never loaded it" in outcome.findings[0].message


def test_lightning_cli_with_the_preset_relaunches_identically_and_resumes(tmp_path: Path) -> None:
    """The preset's old `--trainer.logger=false` made every relaunch abort in SaveConfigCallback
    (config.yaml already in the run dir); with a local CSV logger each launch has its own."""
    pytest.importorskip("jsonargparse")
    settings = framework_settings(
        tmp_path / "cli",
        {
            "main.py": "lightning_cli/main.py",
            "tiny.yaml": "lightning_cli/tiny.yaml",
            "train.py": "lightning_trainer/train.py",
        },
        '  command: "python main.py fit --config tiny.yaml"\n'
        "  preset: lightning-cli\n"
        "  timeout: 180\n",
        {"signals": ["SIGKILL"], "kill-during-save": False},
    )
    assert settings.mode == "continues"  # the preset's: mid-epoch resume is not bit-exact
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    scenario = outcome.judgement.scenarios[0]
    assert (scenario["durable_checkpoint_step"], scenario["relaunch_first_step"]) == (4, 5)

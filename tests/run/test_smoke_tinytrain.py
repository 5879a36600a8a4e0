"""``rentcheck smoke`` on the real examples/tinytrain: it passes, and says how the run ended."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tinykit import copy_tinytrain, project_config

from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke


def test_tinytrain_passes_and_exits_on_its_own_through_the_cli(cli, tmp_path: Path) -> None:
    root = copy_tinytrain(tmp_path / "tinytrain")
    result = cli("smoke", "--output-format", "json", cwd=root)
    assert result.code == 0, result.out
    doc = json.loads(result.out)
    smoke = doc["smoke"]
    assert doc["command"] == "smoke" and doc["results"] == []
    assert smoke["passed"] and smoke["class"] is None
    # --steps 2 in the args: the program ended itself, teardown and final save included.
    assert smoke["ended_by"] == "exited on its own (exit 0)"
    assert smoke["optimizer_steps"] == 2
    assert smoke["shim"]["status"] == "active" and smoke["shim"]["optimizer_steps"] == 2
    assert smoke["env"]["CUDA_VISIBLE_DEVICES"] == "" and smoke["env"]["WANDB_MODE"] == "disabled"
    assert smoke["workdir_kept"] is None
    assert not list(root.glob("checkpoints")), "the run must write into its temp dir only"


def test_the_shim_stops_a_run_after_n_optimizer_steps(tmp_path: Path) -> None:
    root = copy_tinytrain(tmp_path / "tinytrain")
    settings = smoke_settings(
        project_config(root), {"args": ["--steps", "500", "--ckpt-every", "1"], "steps": 3}
    )
    outcome = run_smoke(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.ended_by == "stopped by rentcheck after 3 optimizer steps"
    # Stopped before step 4 began, so the program printed its own line for step 3.
    assert sorted(outcome.losses) == [1, 2, 3]
    assert outcome.shim.stopped_after == 3 and outcome.result.returncode == 0
    assert not any(p.name.startswith("rentcheck-smoke-") for p in tmp_path.iterdir())


def test_a_run_that_ignores_pythonpath_gets_an_exit_code_verdict(tmp_path: Path) -> None:
    """`python -E` drops the shim (as -I/-S would); the gate still judges by exit code + log."""
    root = copy_tinytrain(tmp_path / "tinytrain")
    settings = smoke_settings(
        project_config(root), {"command": ["{python}", "-E", "{root}/train.py"]}
    )
    outcome = run_smoke(settings, workdir_parent=str(tmp_path))
    assert outcome.passed
    assert outcome.shim.status == "unavailable"
    assert [f.code for f in outcome.findings] == ["RC614"]
    assert outcome.findings[0].severity.label == "note"
    assert outcome.observed_steps == 2  # from the log's step lines
    assert os.path.basename(outcome.settings.argv[2]) == "train.py"

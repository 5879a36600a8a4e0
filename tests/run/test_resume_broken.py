"""Every broken resume variant of tinytrain fails with the finding that names its cause.

The variants share one uninterrupted reference run (their bugs only show after a resume) and
run just the scenario their bug needs: two processes each.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tinykit import make_variant, project_config, variant, variant_names

from rentcheck.run.resume import run_resume
from rentcheck.run.settings import resume_settings


@pytest.mark.parametrize("name", variant_names("resume"))
def test_broken_variant_is_caught(name: str, tmp_path: Path, tinytrain_reference) -> None:
    spec = variant(name)
    root = make_variant(name, tmp_path / name)
    save = spec["scenario"] == "save"
    overrides = {"signals": [] if save else ["SIGKILL"], "kill-during-save": save}
    settings = resume_settings(project_config(root), overrides)
    outcome = run_resume(settings, reference=tinytrain_reference, workdir_parent=str(tmp_path))
    assert not outcome.passed
    codes = [f.code for f in outcome.findings]
    assert codes[0] == spec["code"], outcome.verdict_lines()
    scenario = outcome.judgement.scenarios[0]
    if name == "never_loads":
        assert scenario["relaunch_first_step"] == 1 and scenario["durable_checkpoint_step"] == 4
        # Losses alone cannot see it: a deterministic restart reproduces them exactly.
        assert scenario["first_mismatch"] is None
    if name in ("rng_not_restored", "data_position_reset"):
        assert scenario["first_mismatch"] == scenario["relaunch_first_step"] == 5
    if name == "optimizer_not_restored":
        # Step 5's loss uses restored weights; its update uses the fresh AdamW moments.
        assert scenario["relaunch_first_step"] == 5 and scenario["first_mismatch"] == 6
    if name == "scheduler_not_restored":
        # Step 5 still uses the lr restored with the optimizer; the scheduler resets it after.
        assert scenario["relaunch_first_step"] == 5 and scenario["first_mismatch"] == 7
    if name == "non_atomic_save":
        # Written in place under the final name, and the relaunch crashed on the cut file.
        assert Path(scenario["cut_file"]).name == "ckpt-000008.pt"
        assert codes == ["RC626"]
        assert "PytorchStreamReader" in outcome.findings[0].message
    assert outcome.workdirs and all(Path(w).is_dir() for w in outcome.workdirs)

"""Every resume run stops at `steps`, flag or no flag; a kill never lands after the run's end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tinykit import FIXTURES, project_config

from rentcheck.run.resume import run_resume
from rentcheck.run.settings import resume_settings

SCRIPT = FIXTURES / "endless_resumer" / "train.py"


def _settings(root: Path, args: str, steps: int):  # type: ignore[no-untyped-def]
    root.mkdir()
    shutil.copy(SCRIPT, root / "train.py")
    (root / "rentcheck.yaml").write_text(
        f'resume:\n  command: "python train.py {args}"\n  steps: {steps}\n  timeout: 120\n'
        "  checkpoint-dir: ckpt\n"
    )
    return resume_settings(project_config(root))


def test_a_trainer_without_a_steps_flag_stops_at_steps_reference_and_relaunches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _settings(tmp_path / "endless", "--every 2", steps=6)
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    # Off a terminal, progress still reaches stderr: one line per launch as it ends.
    progress = capsys.readouterr().err.splitlines()
    assert len(progress) == 6 and all(line.startswith("resume: ") for line in progress)
    assert "resume: reference: stopped by rentcheck after step 6 of this process" in "\n".join(
        progress
    )
    ref = outcome.reference
    assert ref.shim.stopped_after == 6 and not ref.result.timed_out
    runs = [run for chain in outcome.chains for run in chain.runs]
    assert not any(run.result.timed_out for run in runs)
    # Each relaunch stops where the reference stopped: the last step every chain logs is 6.
    for chain in outcome.chains:
        assert chain.runs[-1].shim.stopped_after is not None
    assert outcome.scenarios_judged == 3 == outcome.to_dict()["scenarios_judged"]
    ended = [s.get("relaunch_last_step") for s in outcome.judgement.scenarios]
    assert ended[-1] == 6 and ended[1] == 6, outcome.judgement.scenarios


def test_a_resumer_whose_kill_would_land_after_its_end_is_not_judged(tmp_path: Path) -> None:
    """The run ends by itself after 6 steps and checkpoints at 6 only: no step lies between its
    checkpoint and its end. The HF example's false RC620 came from such kills; now the
    scenarios are reported as not run, never as a failure."""
    settings = _settings(tmp_path / "short", "--every 6 --total 6", steps=12)
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    codes = {f.code for f in outcome.findings}
    assert "RC620" not in codes and "RC634" in codes, outcome.verdict_lines()
    assert outcome.scenarios_judged == 0
    assert all(f.severity.label == "note" for f in outcome.findings)
    assert (
        "0 of" in outcome.verdict_lines()[0]
        and "x one uninterrupted" not in outcome.verdict_lines()[0]
    )

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
    assert "resume: reference: stopped by rentcheck after step 6 (" in "\n".join(progress)
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
    _one_step_numbering(outcome, progress)


def _one_step_numbering(outcome, progress: list[str]) -> None:  # type: ignore[no-untyped-def]
    """ "After step k" is k optimizer steps done, counted from the run's start, in the progress
    lines, the verdict lines and the JSON alike."""
    import json
    import re

    verdict = "\n".join(outcome.verdict_lines())
    data = json.loads(json.dumps(outcome.to_dict()))
    killed = [run for chain in outcome.chains for run in chain.runs if run.interrupted]
    for scenario, run in zip(data["scenarios"], killed, strict=True):
        k = scenario["killed_after_step"]
        signal_name = scenario["scenario"].split()[0]
        # progress: "resume: kill1: SIGKILL sent after step 3 (0.1 s), relaunching..."; a
        # relaunch's: "... after 3 steps of this launch (step 5 if it resumed after ...)"
        said = next(line for line in progress if line.startswith(f"resume: {run.label}: "))
        where = rf"(step {k}\b|\d+ steps? of this launch \(step {k} if it resumed)"
        assert re.search(rf"{signal_name} sent after {where}", said), (said, scenario)
        assert f"{scenario['scenario']}: killed after step {k}" in verdict, verdict
        first, durable = scenario["relaunch_first_step"], scenario["durable_checkpoint_step"]
        assert first == durable + 1 and durable < k
        assert f"relaunch continued at step {first} (newest complete checkpoint: {durable})" in (
            verdict
        )
    # A relaunch that ends at `steps` says so in the numbers the reference uses.
    for chain in outcome.chains:
        last = chain.runs[-1]
        said = next(line for line in progress if line.startswith(f"resume: {last.label}: "))
        assert re.search(r"stopped by rentcheck after .*\bstep 6\b", said), said
    assert "reference: stopped by rentcheck after step 6" in verdict


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


def test_a_kill_past_the_projects_own_end_is_replanned_from_the_steps_it_took(
    tmp_path: Path,
) -> None:
    """The project ends by itself after 6 steps (its own flag), `steps` says 12: the kill
    planned half an interval after the first checkpoint (step 4), before step 7, never lands.
    The chain starts over with the kill planned before step 6 (after step 5, checkpoint 4 on
    disk) and is judged; the SIGTERM kill, which has no step left before the end, is reported
    as not run. Nothing is judged a failure."""
    settings = _settings(tmp_path / "ends", "--every 4 --total 6", steps=12)
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    codes = [f.code for f in outcome.findings]
    assert "RC620" not in codes and "RC621" not in codes, outcome.verdict_lines()
    assert outcome.reference.shim.steps == 6 and outcome.reference.shim.stopped_after is None
    by_title = {s["scenario"]: s for s in outcome.judgement.scenarios}
    killed = by_title["SIGKILL between checkpoints"]
    assert killed["ran"], outcome.judgement.scenarios
    assert killed["killed_after_step"] == 5 and killed["durable_checkpoint_step"] == 4
    assert killed["relaunch_first_step"] == 5 and killed["relaunch_last_step"] == 6
    assert by_title["SIGTERM between checkpoints"]["ran"] is False
    assert "RC634" in codes and all(f.severity.label == "note" for f in outcome.findings)


def test_a_chain_that_started_before_the_end_was_known_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The chain runs beside the reference and may learn the project's own end only from its
    own first run: that run ends by itself, and the chain starts over in a fresh copy with
    the kill planned before that end."""
    import signal
    import tempfile

    from rentcheck.run.resume import ObservedEnd, _run_chain
    from rentcheck.run.runs import Interrupt

    settings = _settings(tmp_path / "ends", "--every 4 --total 6", steps=12)
    end = ObservedEnd()
    chain = _run_chain(
        settings,
        "kill",
        (Interrupt("step", signal.SIGKILL),),
        str(tmp_path),
        tempfile.mkdtemp(dir=tmp_path),
        end=end,
    )
    assert end.steps == 6
    err = capsys.readouterr().err
    assert "resume: kill1: ended by itself after step 6, before its kill: starting over" in err
    killed, relaunch = chain.runs
    assert killed.interrupted and killed.shim.steps == 5, killed.result.lines[-5:]
    assert not relaunch.interrupted and relaunch.shim.steps == 2  # steps 5 and 6
    assert any("resumed from" in line and "at step 4" in line for line in relaunch.result.lines)

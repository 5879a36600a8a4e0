"""A timeout is not a hang: a run the shim sees still stepping at its time limit is "too slow
for the time limit" (RC615, with the fix), a run that stopped stepping is a hang (RC608); a
resume launch still stepping gets the time its own measured pace needs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tinykit import FIXTURES, project_config

from rentcheck.run.process import Launch, supervise
from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke

SCRIPT = FIXTURES / "paced_trainer" / "train.py"


def _smoke(root: Path, args: str, steps: int, timeout: int):  # type: ignore[no-untyped-def]
    root.mkdir()
    shutil.copy(SCRIPT, root / "train.py")
    (root / "rentcheck.yaml").write_text(
        f'smoke:\n  command: "python train.py {args}"\n  steps: {steps}\n  timeout: {timeout}\n'
    )
    return run_smoke(smoke_settings(project_config(root)), workdir_parent=str(root.parent))


def test_a_run_still_stepping_at_the_limit_is_too_slow_not_a_hang(tmp_path: Path) -> None:
    outcome = _smoke(tmp_path / "slow", "--pace 0.2", steps=100_000, timeout=8)
    assert outcome.result.timed_out and outcome.shim.steps >= 2, outcome.verdict_lines()
    assert outcome.failure is not None and outcome.failure.kind == "too-slow"
    finding = outcome.findings[0]
    assert finding.code == "RC615", finding.message
    assert finding.message.startswith("too slow for the time limit: still stepping")
    assert "lower `steps` or raise `timeout` in the smoke section" in finding.message
    assert "s per step" in finding.message and "hang" not in finding.message


def test_a_run_that_stopped_stepping_is_a_hang(tmp_path: Path) -> None:
    outcome = _smoke(tmp_path / "hung", "--pace 0 --hang-after 3", steps=100, timeout=8)
    assert outcome.result.timed_out and outcome.shim.steps == 3, outcome.verdict_lines()
    assert outcome.failure is not None and outcome.failure.kind == "hang"
    assert outcome.findings[0].code == "RC608"
    assert "after 3 optimizer step(s), none for" in outcome.findings[0].message


def test_a_run_working_between_steps_at_the_limit_is_too_slow_not_a_hang(tmp_path: Path) -> None:
    """minGPT's chargpt samples 500 tokens after its first step: no step for minutes, but the
    process computes. The CPU it used since its last step tells it from a wait."""
    outcome = _smoke(tmp_path / "busy", "--pace 0 --busy-after 2", steps=100, timeout=8)
    assert outcome.result.timed_out and outcome.shim.steps == 2, outcome.verdict_lines()
    assert outcome.failure is not None and outcome.failure.kind == "too-slow"
    message = outcome.findings[0].message
    assert outcome.findings[0].code == "RC615", message
    assert "busy at the time limit (after step 2, no step for" in message
    assert "raise `timeout` in the smoke section" in message


def test_a_stretched_limit_lets_a_run_still_stepping_reach_its_stop(tmp_path: Path) -> None:
    """The limit (8 s) runs out while the run steps; its pace (0.1 s a step) reaches step 150
    inside 4x the limit: the shim stops it there, no timeout. The same run under a hard limit
    times out."""
    import sys

    state = tempfile.mkdtemp(dir=tmp_path)

    def launch(name: str, stretch: float, args: tuple[str, ...]) -> Launch:
        return Launch(
            argv=(sys.executable, str(SCRIPT), *args),
            cwd=str(tmp_path),
            env={"CUDA_VISIBLE_DEVICES": ""},
            timeout=8,
            shim=True,
            shim_settings={"RENTCHECK_SHIM_STOP_AFTER": "150"},
            state_dir=state,
            name=name,
            stretch=stretch,
        )

    stretched = supervise(launch("stretched", 4.0, ("--pace", "0.1")))
    assert not stretched.timed_out and stretched.returncode == 0, stretched.lines[-5:]
    assert any(e.get("e") == "stop" and e.get("steps") == 150 for e in stretched.events)
    assert stretched.limit_s > 8
    hard = supervise(launch("hard", 1.0, ("--pace", "0.1")))
    assert hard.timed_out and hard.limit_s == 8
    # Working for 10 s after step 1 (an evaluation): no step at the limit, but no hang either;
    # it gets another `timeout` and reaches its stop.
    working = supervise(
        launch("working", 4.0, ("--pace", "0", "--busy-after", "1", "--busy-for", "10"))
    )
    assert not working.timed_out and working.returncode == 0, working.lines[-5:]
    assert working.limit_s > 8


def test_a_resume_reference_too_slow_for_any_stretch_says_so_not_hang(tmp_path: Path) -> None:
    """minGPT's chargpt under CPU load: still training when the limit ran out, and far from
    its stop at its pace: RC631 says too slow, with the measured pace and the keys to change."""
    from rentcheck.run.resume import run_reference
    from rentcheck.run.resume_judge import judge
    from rentcheck.run.settings import resume_settings

    root = tmp_path / "slowref"
    root.mkdir()
    shutil.copy(SCRIPT, root / "train.py")
    (root / "rentcheck.yaml").write_text(
        'resume:\n  command: "python train.py --pace 0.2"\n  steps: 100000\n  timeout: 8\n'
    )
    settings = resume_settings(project_config(root))
    reference = run_reference(settings, workdir_parent=str(tmp_path))
    assert reference.result.timed_out and reference.shim.steps >= 2
    [finding] = judge(settings, reference, []).findings
    assert finding.code == "RC631" and finding.details["class"] == "too-slow", finding.message
    text = finding.message
    assert text.startswith("the uninterrupted run was too slow for the time limit"), text
    assert "not hung" in text and "hang" not in text.replace("not hung", "")
    assert "lower `steps` or raise `timeout` in the resume section" in text

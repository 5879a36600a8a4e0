"""Steps the shim cannot miss: however torch is imported, however parameters are updated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tinykit import FIXTURES, project_config

from rentcheck.payload import SHIM_DIR
from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke

SCRIPT = FIXTURES / "hand_sgd" / "train.py"


def _shimmed(tmp_path: Path, *args: str, stop_after: int = 3) -> tuple[list[str], list[dict]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENTCHECK_SHIM_")}
    report = tmp_path / "report.jsonl"
    env.update(
        PYTHONPATH=SHIM_DIR,
        RENTCHECK_SHIM_REPORT=str(report),
        RENTCHECK_SHIM_STOP_AFTER=str(stop_after),
        RENTCHECK_SHIM_FINITE="1",
    )
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return proc.stdout.splitlines(), [json.loads(line) for line in report.read_text().splitlines()]


@pytest.mark.parametrize("how", ["probe", "import_module", "lazy", "deferred"])
def test_a_find_spec_probe_or_an_indirect_import_does_not_blind_the_shim(
    tmp_path: Path, how: str
) -> None:
    lines, events = _shimmed(tmp_path, "--import", how, "--update", "subclass")
    assert [e["n"] for e in events if e["e"] == "step"] == [1, 2, 3], events
    assert all(e["by"] == "optimizer" for e in events if e["e"] == "step")
    assert [e["steps"] for e in events if e["e"] == "stop"] == [3]
    assert len(lines) == 3  # stopped before the 4th step, of 10_000


@pytest.mark.parametrize("update", ["hand", "custom"])
def test_parameters_updated_by_hand_are_steps(tmp_path: Path, update: str) -> None:
    """`p.data.add_(p.grad, alpha=-lr)` (pytorch/examples) and an optimizer that is no
    torch.optim.Optimizer: no step hook fires, the parameters change between backwards."""
    lines, events = _shimmed(tmp_path, "--update", update, "--import", "probe", stop_after=4)
    steps = [e for e in events if e["e"] == "step"]
    assert [e["n"] for e in steps] == [1, 2, 3, 4] and {e["by"] for e in steps} == {"parameters"}
    assert len(lines) == 4 and not any(e["e"] == "shim-error" for e in events)


def test_backwards_without_any_update_are_no_steps(tmp_path: Path) -> None:
    lines, events = _shimmed(tmp_path, "--update", "none", "--epochs", "5")
    assert len(lines) == 5 and not any(e["e"] in ("step", "stop") for e in events)


def _project(root: Path, args: str, extra: str = "") -> Path:
    root.mkdir()
    shutil.copy(SCRIPT, root / "main.py")
    (root / "rentcheck.yaml").write_text(
        f'smoke:\n  command: "python main.py {args}"\n  steps: 3\n  timeout: 120\n{extra}'
    )
    return root


def test_smoke_of_a_hand_sgd_loop_without_a_steps_flag_stops_after_n_steps(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "wlm", "--import probe")
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.shim.steps == 3 and outcome.observed_steps == 3
    assert outcome.ended_by == "stopped by rentcheck after 3 optimizer steps"
    assert outcome.to_dict()["optimizer_steps"] == 3


def test_smoke_of_a_run_that_never_updates_fails_with_the_reason(tmp_path: Path) -> None:
    """Forward and backward, no update, exit 0: the smoke that used to pass on exit code."""
    root = _project(tmp_path / "noupdate", "--update none --epochs 4")
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert not outcome.passed
    assert [f.code for f in outcome.findings] == ["RC613"]
    assert outcome.to_dict()["optimizer_steps"] == 0
    assert "no parameter changed" in outcome.findings[0].message
    assert "PASSED" not in outcome.verdict_lines()[0]


def test_shim_off_needs_step_lines_in_the_log(tmp_path: Path) -> None:
    root = _project(tmp_path / "off", "--epochs 3", "  shim: off\n")
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert not outcome.passed and [f.code for f in outcome.findings] == ["RC613"]
    assert "step shim was off" in outcome.findings[0].message
    # The same run with its step lines described passes on them, NaN lines checked.
    regex = "  step-regex: ['\\| epoch +(?P<step>\\d+) .*loss +(?P<loss>\\S+)']\n"
    (root / "rentcheck.yaml").write_text((root / "rentcheck.yaml").read_text() + regex)
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    assert outcome.observed_steps == 3 and outcome.shim.status == "off"


def test_smoke_of_optimizer_steps_that_change_nothing_fails(tmp_path: Path) -> None:
    """optimizer.step() without a backward: the step hook fires, no parameter moves. The log
    has a step line per step too; neither makes it a step that trained."""
    root = _project(tmp_path / "nograd", "--update nograd --epochs 4")
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert not outcome.passed and [f.code for f in outcome.findings] == ["RC613"]
    assert outcome.shim.idle and outcome.to_dict()["optimizer_steps"] == 0
    assert "changed no parameter" in outcome.findings[0].message

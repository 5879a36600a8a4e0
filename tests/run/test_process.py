"""The supervisor with real processes: group kill, drain, timeout, trigger, env block."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rentcheck.errors import GateError
from rentcheck.payload import SHIM_DIR
from rentcheck.run.process import Launch, cpu_env_block, redacted, reproduce_line, supervise


def _launch(tmp_path: Path, *argv: str, **kw: object) -> Launch:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    options: dict = {"env": {}, "timeout": 60.0, "shim": False, "state_dir": str(state), **kw}
    return Launch(argv=tuple(argv), cwd=str(tmp_path), **options)


def _gone(pid: int) -> bool:
    """Not running any more (gone, or a zombie waiting for init to reap it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_outlives_the_main_process_is_killed_with_its_group(tmp_path: Path) -> None:
    # Like a DataLoader worker: it holds the output pipe after the main process exited.
    result = supervise(_launch(tmp_path, "sh", "-c", "sleep 300 & echo $!; echo main done"))
    assert result.returncode == 0 and not result.timed_out
    child = int(result.lines[0])
    assert result.lines[1] == "main done"
    assert _gone(child)


def test_a_timeout_stops_the_whole_group(tmp_path: Path) -> None:
    result = supervise(_launch(tmp_path, "sh", "-c", "echo waiting; sleep 300", timeout=0.5))
    assert result.timed_out and result.returncode == -signal.SIGTERM
    assert result.lines == ["waiting"]


def test_a_trigger_signals_the_group_when_it_asks(tmp_path: Path) -> None:
    code = (
        "import time\nfor i in range(50):\n    print('step', i, flush=True)\n    time.sleep(0.05)\n"
    )
    seen: list[int] = []

    def trigger(events, lines):  # type: ignore[no-untyped-def]
        seen.append(len(lines))
        return signal.SIGKILL if "step 3" in lines else None

    result = supervise(_launch(tmp_path, sys.executable, "-c", code), trigger)
    assert result.sent_signal == signal.SIGKILL and result.returncode == -signal.SIGKILL
    assert "step 3" in result.lines and "step 49" not in result.lines
    assert seen  # it was polled


def test_carriage_returns_split_progress_bars_into_lines(tmp_path: Path) -> None:
    result = supervise(_launch(tmp_path, "printf", "a 1/3\\ra 2/3\\ra 3/3\\nnext\\n"))
    assert result.lines == ["a 1/3", "a 2/3", "a 3/3", "next"]


def test_a_missing_executable_is_a_gate_error_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="cannot start 'no-such-trainer'") as info:
        supervise(_launch(tmp_path, "no-such-trainer"))
    assert "copy of the project" in info.value.hint


def test_env_block_shim_path_and_inherited_shim_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RENTCHECK_SHIM_STOP_AFTER", "99")  # e.g. rentcheck run inside a smoke
    monkeypatch.setenv("PYTHONPATH", "/their/path")
    block = cpu_env_block(offline=True, workdir=str(tmp_path))
    assert block["CUDA_VISIBLE_DEVICES"] == "" and block["HF_HUB_OFFLINE"] == "1"
    assert "HF_HUB_OFFLINE" not in cpu_env_block(offline=False, workdir=str(tmp_path))
    off = _launch(tmp_path, "true", env=block).full_env()
    assert "RENTCHECK_SHIM_STOP_AFTER" not in off and off["PYTHONPATH"] == "/their/path"
    on = _launch(
        tmp_path, "true", env=block, shim=True, shim_settings={"RENTCHECK_SHIM_FINITE": "1"}
    )
    env = on.full_env()
    assert env["PYTHONPATH"] == f"{SHIM_DIR}{os.pathsep}/their/path"
    assert env["RENTCHECK_SHIM_FINITE"] == "1" and "RENTCHECK_SHIM_STOP_AFTER" not in env
    line = reproduce_line(on)
    assert line.startswith('cd "$(mktemp -d)" && env ') and line.endswith(" true")
    assert "CUDA_VISIBLE_DEVICES=''" in line and "RENTCHECK_SHIM_FINITE=1" in line
    assert "TOKENIZERS_PARALLELISM=false" in line


def test_secrets_in_the_env_never_reach_a_report(tmp_path: Path) -> None:
    launch = _launch(tmp_path, "train", env={"HF_TOKEN": "hf_abc", "WANDB_API_KEY": "k", "LR": "1"})
    line = reproduce_line(launch)
    assert "hf_abc" not in line and 'HF_TOKEN="$HF_TOKEN"' in line and "LR=1" in line
    assert redacted(launch.env) == {
        "HF_TOKEN": "$HF_TOKEN",
        "WANDB_API_KEY": "$WANDB_API_KEY",
        "LR": "1",
    }

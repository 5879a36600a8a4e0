"""End-to-end checks of examples/tinytrain: real processes, real kills, real files.

The resume checks compare against an uninterrupted reference run, line for line: losses are
printed as %.9e, so equal text means bit-equal float32 values.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("torch")

TINYTRAIN = Path(__file__).resolve().parents[2] / "examples" / "tinytrain"
TRAIN_PY = TINYTRAIN / "train.py"
RUN_SH = TINYTRAIN / "run.sh"

# Generous: a hang should fail the test, not block the suite, but a slow machine should pass.
TIMEOUT_S = 120.0
STEPS = 12
CKPT_EVERY = 4
# Slows only the run that gets killed (and its identical relaunch): the kill, sent as soon as
# "step=6" is read, then lands long before step 8's checkpoint is written.
SLEEP_PER_STEP = "0.2"

STEP_LINE = re.compile(r"^step=(\d+) loss=-?\d\.\d{9}e[+-]\d{2}$")
SAVED_LINE = re.compile(r"^saved (\S+) step=(\d+)$")
DONE_LINE = re.compile(r"^done step=(\d+) weights_sha256=[0-9a-f]{64}$")


@dataclass(frozen=True)
class Run:
    returncode: int
    lines: list[str]
    stderr: str

    @property
    def step_lines(self) -> dict[int, str]:
        return {int(m.group(1)): m.group(0) for m in map(STEP_LINE.match, self.lines) if m}

    @property
    def step_numbers(self) -> list[int]:
        return [int(m.group(1)) for m in map(STEP_LINE.match, self.lines) if m]

    @property
    def saved_steps(self) -> list[int]:
        return [int(m.group(2)) for m in map(SAVED_LINE.match, self.lines) if m]

    @property
    def done_line(self) -> str:
        done = [line for line in self.lines if DONE_LINE.match(line)]
        assert len(done) == 1, f"expected one done line in {self.lines}"
        return done[0]


@dataclass(frozen=True)
class Reference:
    run: Run
    ckpt_dir: Path


def train_command(ckpt_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-u",
        str(TRAIN_PY),
        "--steps",
        str(STEPS),
        "--ckpt-every",
        str(CKPT_EVERY),
        "--ckpt-dir",
        str(ckpt_dir),
        *extra,
    ]


def run_to_end(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    proc = subprocess.run(
        list(cmd),
        cwd=cwd,
        env=child_env() if env is None else env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Run(proc.returncode, proc.stdout.splitlines(), proc.stderr)


def run_and_kill_at(cmd: Sequence[str], cwd: Path, trigger: str, sig: signal.Signals) -> Run:
    """Start `cmd`, send `sig` to its process group as soon as a line starts with `trigger`."""
    stderr_path = cwd / "killed-run.stderr"
    with stderr_path.open("w") as stderr_file:
        # stderr goes to a file: an undrained pipe could fill up and stall the child.
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
            start_new_session=True,
        )
    assert proc.stdout is not None
    stdout = proc.stdout
    # A reader thread, so that waiting for a line can time out instead of blocking forever.
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {trigger!r} line within {TIMEOUT_S}s; got {seen}")
            if line is None:
                break
            seen.append(line)
            if line.startswith(trigger):
                os.killpg(proc.pid, sig)
                break
        proc.wait(timeout=TIMEOUT_S)
        # Whatever the child wrote before it died is still in the pipe; keep it.
        reader.join(timeout=TIMEOUT_S)
        while not lines.empty():
            rest = lines.get_nowait()
            if rest is not None:
                seen.append(rest)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=TIMEOUT_S)
        stdout.close()
    return Run(proc.returncode, seen, stderr_path.read_text())


def checkpoint_steps(ckpt_dir: Path) -> list[int]:
    return sorted(int(p.name[5:11]) for p in ckpt_dir.glob("ckpt-*.pt"))


def child_env(**extra: str) -> dict[str, str]:
    # No bytecode caches: the example's modules live in the source tree.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **extra}


def launcher_env(ckpt_dir: Path, **extra: str) -> dict[str, str]:
    return child_env(PYTHON=sys.executable, TINYTRAIN_CKPT_DIR=str(ckpt_dir), **extra)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The uninterrupted run, through run.sh as a user would start it.

    The other runs call train.py directly; matching them line for line also shows that the
    launcher adds nothing that changes the numbers.
    """
    workdir = tmp_path_factory.mktemp("reference")
    ckpt_dir = workdir / "ckpt"
    cmd = [str(RUN_SH), "--steps", str(STEPS), "--ckpt-every", str(CKPT_EVERY)]
    run = run_to_end(cmd, cwd=workdir, env=launcher_env(ckpt_dir))
    assert run.returncode == 0, run.stderr
    return Reference(run, ckpt_dir)


def test_uninterrupted_run_prints_every_step_then_done(reference: Reference) -> None:
    run = reference.run
    assert run.lines[0] == "starting from scratch"
    assert run.step_numbers == list(range(1, STEPS + 1))
    assert run.saved_steps == [4, 8, 12]
    assert DONE_LINE.match(run.lines[-1])
    assert run.lines[-1].startswith(f"done step={STEPS} ")


def test_clean_run_leaves_only_final_checkpoints(reference: Reference) -> None:
    names = sorted(p.name for p in reference.ckpt_dir.iterdir())
    assert not [name for name in names if ".tmp" in name]
    # keep_last defaults to 3 and the final step is always saved; config.json is run.sh's copy.
    assert names == ["ckpt-000004.pt", "ckpt-000008.pt", "ckpt-000012.pt", "config.json"]


def test_sigkill_between_checkpoints_then_identical_relaunch_continues_exactly(
    tmp_path: Path, reference: Reference
) -> None:
    ckpt_dir = tmp_path / "ckpt"
    cmd = train_command(ckpt_dir, "--sleep-per-step", SLEEP_PER_STEP)

    killed = run_and_kill_at(cmd, tmp_path, "step=6 ", signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert checkpoint_steps(ckpt_dir) == [4], "the kill should land between checkpoints 4 and 8"
    for step, line in killed.step_lines.items():
        assert line == reference.run.step_lines[step]

    relaunch = run_to_end(cmd, tmp_path)  # byte-identical command, same cwd
    assert relaunch.returncode == 0, relaunch.stderr
    assert relaunch.lines[0] == f"resumed from {ckpt_dir / 'ckpt-000004.pt'} at step=4"
    # Continuity: a trainer that ignored its checkpoint would start again at step 1 and,
    # being deterministic, still match the reference; only this check catches that.
    assert relaunch.step_numbers == list(range(5, STEPS + 1))
    for step, line in relaunch.step_lines.items():
        assert line == reference.run.step_lines[step], f"step {step} diverged"
    assert relaunch.done_line == reference.run.done_line


def test_truncated_newest_checkpoint_falls_back_to_previous(
    tmp_path: Path, reference: Reference
) -> None:
    ckpt_dir = tmp_path / "ckpt"
    shutil.copytree(reference.ckpt_dir, ckpt_dir)
    newest = ckpt_dir / "ckpt-000012.pt"
    os.truncate(newest, newest.stat().st_size // 2)

    run = run_to_end(train_command(ckpt_dir), tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"warning: ignoring unusable checkpoint {newest}" in run.stderr
    # Step 8 is also the end of an epoch (256 samples / 32), so this resumes into a new epoch.
    assert run.lines[0] == f"resumed from {ckpt_dir / 'ckpt-000008.pt'} at step=8"
    assert run.step_numbers == [9, 10, 11, 12]
    for step, line in run.step_lines.items():
        assert line == reference.run.step_lines[step], f"step {step} diverged"
    assert run.done_line == reference.run.done_line


def test_run_sh_is_clean_and_relaunch_after_finish_only_reports(
    tmp_path: Path, reference: Reference
) -> None:
    script = RUN_SH.read_bytes()
    assert script.startswith(b"#!/usr/bin/env bash\n")
    assert b"\r" not in script
    assert os.access(RUN_SH, os.X_OK)
    syntax = subprocess.run(
        ["bash", "-n", str(RUN_SH)], capture_output=True, text=True, timeout=30, check=False
    )
    assert syntax.returncode == 0, syntax.stderr

    ckpt_dir = tmp_path / "ckpt"
    shutil.copytree(reference.ckpt_dir, ckpt_dir)
    assert (ckpt_dir / "config.json").read_bytes() == (TINYTRAIN / "config.json").read_bytes()
    cmd = [str(RUN_SH), "--steps", str(STEPS), "--ckpt-every", str(CKPT_EVERY)]

    again = run_to_end(cmd, tmp_path, launcher_env(ckpt_dir))
    assert again.returncode == 0, again.stderr
    resumed = f"resumed from {ckpt_dir / 'ckpt-000012.pt'} at step={STEPS}"
    assert again.lines == [resumed, reference.run.done_line]

    edited = tmp_path / "edited.json"
    original = (TINYTRAIN / "config.json").read_text()
    edited.write_text(original.replace('"seed": 1234', '"seed": 1'))
    assert edited.read_text() != original
    refused = run_to_end(cmd, tmp_path, launcher_env(ckpt_dir, TINYTRAIN_CONFIG=str(edited)))
    assert refused.returncode == 2
    assert "differs from" in refused.stderr

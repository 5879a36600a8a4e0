"""Each Python rule's "why", reproduced with real torch and real processes: the flagged code
fails the way the rule says, the fixed code (which the rule leaves alone) does not."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint.reproduce import flagged, wait_for, write

torch = pytest.importorskip("torch")


def _python(
    code: str, cwd: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


# Saves a checkpoint big enough to take a while, announcing when the write has begun.
_SAVER = """
import os, sys, threading, time, torch
path, atomic = sys.argv[1], sys.argv[2] == "atomic"
state = {"w": torch.ones(64 * 1024 * 1024 // 4)}  # 64 MiB
# The previous checkpoint is small: the save has begun once the target outgrows it.
floor = 0 if atomic else os.path.getsize(path)
def announce():
    target = path + ".tmp" if atomic else path
    while not (os.path.exists(target) and os.path.getsize(target) > floor):
        time.sleep(0.001)
    open(path + ".writing", "w").close()
threading.Thread(target=announce, daemon=True).start()
for _ in range(1000):
    if atomic:
        torch.save(state, path + ".tmp"); os.replace(path + ".tmp", path)
    else:
        torch.save(state, path)
"""


def _kill_mid_save(tmp_path: Path, path: Path, mode: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(path), mode], cwd=tmp_path)
    try:
        wait_for(Path(str(path) + ".writing").exists, "the save to start", limit=120)
        proc.send_signal(signal.SIGKILL)  # a preemption, mid-write
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_rc201_a_kill_mid_save_leaves_no_loadable_checkpoint(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.py", "import torch\nfor step in range(9):\n    torch.save({}, 'ckpt.pt')\n"
    )
    good = write(
        tmp_path / "good.py",
        "import os\nimport torch\nfor step in range(9):\n"
        "    torch.save({}, 'ckpt.pt.tmp')\n    os.replace('ckpt.pt.tmp', 'ckpt.pt')\n",
    )
    assert flagged(bad, "RC201") == [3] and not flagged(good, "RC201")
    for mode in ("in-place", "atomic"):
        path = tmp_path / mode / "ckpt.pt"
        path.parent.mkdir()
        torch.save({"w": torch.zeros(4)}, path)  # the previous good checkpoint
        _kill_mid_save(tmp_path, path, mode)
        if mode == "in-place":
            # a truncated archive (which error depends on where the cut fell); the old
            # checkpoint is gone too
            with pytest.raises((RuntimeError, EOFError, pickle.UnpicklingError)):
                torch.load(path, weights_only=True)
        else:
            assert set(torch.load(path, weights_only=True)) == {"w"}


def test_rc202_spawned_workers_rerun_a_script_without_main_guard(tmp_path: Path) -> None:
    body = (
        "import multiprocessing as mp\nimport torch.utils.data as data\n"
        "mp.set_start_method('spawn', force=True)\n{code}"
    )
    bad = write(
        tmp_path / "bad.py",
        body.format(
            code="loader = data.DataLoader(range(4), num_workers=1)\nprint(list(loader))\n"
        ),
    )
    good = write(
        tmp_path / "good.py",
        body.format(
            code="def main():\n    print(list(data.DataLoader(range(4), num_workers=1)))\n\n\n"
            "if __name__ == '__main__':\n    main()\n"
        ),
    )
    assert flagged(bad, "RC202") == [4] and not flagged(good, "RC202")
    run = subprocess.run([sys.executable, str(bad)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "bootstrapping phase" in run.stderr
    fine = subprocess.run([sys.executable, str(good)], capture_output=True, text=True, timeout=300)
    assert fine.returncode == 0, fine.stderr


def test_rc203_torch_refuses_a_full_state_checkpoint_by_default(tmp_path: Path) -> None:
    import argparse

    bad = tmp_path / "bad.py"
    good = tmp_path / "good.py"
    source = (
        "import torch\n\n\ndef save(model, args, path):\n"
        '    torch.save({"model": model.state_dict(), "args": args}, path)\n\n\n'
        "def resume(path):\n    return torch.load(path, map_location='cpu'EXTRA)\n"
    )
    write(bad, source.replace("EXTRA", ""))
    write(good, source.replace("EXTRA", ", weights_only=False"))
    assert flagged(bad, "RC203") == [9] and not flagged(good, "RC203")
    path = tmp_path / "ckpt.pt"
    torch.save({"model": {}, "args": argparse.Namespace(lr=0.1)}, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path)  # what `resume` does on torch >= 2.6
    assert torch.load(path, weights_only=False)["args"].lr == 0.1


def test_rc204_a_hard_coded_cuda_device_cannot_run_on_a_cpu_box(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this reproduces the CPU smoke run: it needs a machine without a GPU")
    bad = write(tmp_path / "bad.py", "import torch\nx = torch.zeros(2).cuda()\n")
    good = write(
        tmp_path / "good.py",
        "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.zeros(2).to(device)\n",
    )
    assert flagged(bad, "RC204") == [2] and not flagged(good, "RC204")
    run = subprocess.run([sys.executable, str(bad)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "CUDA" in run.stderr
    assert subprocess.run([sys.executable, str(good)], timeout=300).returncode == 0


# Megatron's tracker reader (megatron/checkpointing.py read_metadata), as the corpus has it.
_MEGATRON_RESUME = """
import sys
with open(sys.argv[1]) as f:
    metastring = f.read().strip()
    try:
        iteration = int(metastring)
    except ValueError:
        if metastring != 'release':
            print('ERROR: Invalid metadata file. Exiting')
            sys.exit()
print('resuming from', iteration)
"""

# Opens the tracker the way the flagged code does, then is preempted before the write lands.
_TRACKER_WRITER = """
import os, sys, time
path, atomic = sys.argv[1], sys.argv[2] == "atomic"
with open(path + ".tmp" if atomic else path, "w") as f:
    open(path + ".opened", "w").close()
    time.sleep(600)  # the step number is written after this: the kill comes first
    f.write("2000")
if atomic:
    os.replace(path + ".tmp", path)
"""


def test_rc206_a_tracker_cut_off_by_a_kill_makes_the_relaunch_exit_0(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.py",
        "def save(out, step):\n"
        "    with open(out + '/latest_checkpointed_iteration.txt', 'w') as f:\n"
        "        f.write(str(step))\n",
    )
    good = write(
        tmp_path / "good.py",
        "import os\n\n\ndef save(out, step):\n"
        "    with open(out + '/latest_checkpointed_iteration.txt.tmp', 'w') as f:\n"
        "        f.write(str(step))\n    os.replace(out + '/latest_checkpointed_iteration.txt.tmp',"
        " out + '/latest_checkpointed_iteration.txt')\n",
    )
    assert flagged(bad, "RC206") == [2] and not flagged(good, "RC206")
    for mode, expected in (("in-place", ""), ("atomic", "resuming from 1000")):
        tracker = tmp_path / mode / "latest_checkpointed_iteration.txt"
        tracker.parent.mkdir()
        tracker.write_text("1000")  # step 1000 was committed earlier
        proc = subprocess.Popen([sys.executable, "-c", _TRACKER_WRITER, str(tracker), mode])
        try:
            wait_for(Path(str(tracker) + ".opened").exists, "the tracker to be opened")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        relaunch = _python(_MEGATRON_RESUME, tmp_path, str(tracker))
        assert relaunch.returncode == 0  # either way the launcher sees success ...
        if expected:
            assert relaunch.stdout.strip() == expected
        else:  # ... but here nothing trained: the tracker was emptied by open(…, "w")
            assert "Invalid metadata file" in relaunch.stdout
            assert tracker.read_text() == ""


def test_rc210_an_undefined_name_fails_only_when_its_line_runs(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.py", "def save(step):\n    return f'ckpt-{stpe}.pt'\n")
    good = write(
        tmp_path / "good.py",
        "def deltas(values):\n    out = []\n    for i, value in enumerate(values):\n"
        "        if i > 0:\n            out.append(value - previous)\n"
        "        previous = value\n    return out\n",
    )
    if not flagged(bad, "RC210"):
        pytest.skip("ruff is not installed (extra lint-python)")
    assert flagged(bad, "RC210") == [2] and not flagged(good, "RC210")
    run = _python(f"exec(open({str(bad)!r}).read()); save(1)", tmp_path)
    assert "NameError" in run.stderr
    # Bound later in the loop: defined from the second pass on, which is when it is read.
    fine = _python(f"exec(open({str(good)!r}).read()); print(deltas([1, 4, 9]))", tmp_path)
    assert fine.stdout.strip() == "[3, 5]"


# A training loop that checkpoints every step (atomically, so only the resume is at stake).
_TRAINER = """import argparse
import os
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    model = torch.nn.Linear(4, 2)
    start = 0
RESUME    for step in range(start, args.steps):
        print("step", step, flush=True)
        torch.save({"model": model.state_dict(), "step": step}, "last.pt.tmp")
        os.replace("last.pt.tmp", "last.pt")
        time.sleep(0.05)


if __name__ == "__main__":
    main()
"""
_RESUME = """    if os.path.exists("last.pt"):
        state = torch.load("last.pt", weights_only=True)
        model.load_state_dict(state["model"])
        start = state["step"] + 1
"""


def _kill_after_step(script: Path, step: int) -> None:
    """Run the trainer until ``step`` is saved, then SIGKILL it (a preemption). A step is
    printed before it is saved: the next step's line is what says the save is done."""
    log = script.parent / "first.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, str(script)], cwd=script.parent, stdout=out)
    after = f"step {step + 1}"
    try:
        wait_for(lambda: after in log.read_text(), after, limit=120)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_rc205_a_relaunch_after_a_kill_starts_again_from_step_0(tmp_path: Path) -> None:
    for name, resume in (("bad", ""), ("good", _RESUME)):
        folder = tmp_path / name
        folder.mkdir()
        script = write(folder / "train.py", _TRAINER.replace("RESUME", resume))
        assert flagged(script, "RC205") == ([] if resume else [16])
        _kill_after_step(script, 3)
        saved = torch.load(folder / "last.pt", weights_only=True)["step"]
        assert saved >= 3
        relaunch = subprocess.run(
            [sys.executable, str(script), "--steps", str(saved + 2)],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        first = relaunch.stdout.splitlines()[0]
        # The same command, relaunched: the flagged script redoes every step.
        assert first == ("step 0" if not resume else f"step {saved + 1}")

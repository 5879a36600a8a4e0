"""Helpers for the pull/teardown tests: a real sshd "box", boxes of files, CLI subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.box.sshdkit import SshLab

MiB = 1 << 20


def make_box(root: Path, sizes: dict[str, int], seed: int = 0) -> Path:
    """Files of the given sizes (pseudo-random content) under ``root``."""
    import random

    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))
    return root


def rentcheck(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m rentcheck ARGS`` in a real process."""
    return subprocess.run(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def start_rentcheck(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def report(proc: subprocess.CompletedProcess[str] | tuple[str, str]) -> dict[str, Any]:
    out = proc[0] if isinstance(proc, tuple) else proc.stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


def sshd_children(lab: SshLab) -> list[int]:
    """The per-connection sshd processes of the lab's box server (by parent pid)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == lab.box.proc.pid:
            found.append(int(entry))
    return found


def kill_sshd_children(lab: SshLab) -> int:
    """SIGKILL every sshd child serving a connection to the box: the link drops mid-transfer."""
    killed = 0
    for pid in sshd_children(lab):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


def wait_for(condition: Any, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.02)


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1

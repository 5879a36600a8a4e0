"""Fixtures for the box tests: one real sshd pair per test session (per xdist worker)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sshdkit import SshLab, sshd_binary, start_lab, wait_until

from rentcheck.box.transport import close_all


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    """Real OpenSSH servers on 127.0.0.1: ``box``, ``jump``, and aliases in ``lab.ssh_config``."""
    if os.geteuid() != 0:
        pytest.skip("the sshd fixture runs sshd as root (it logs in as the current user)")
    if sshd_binary() is None:
        pytest.skip("OpenSSH server missing: apt-get install -y openssh-server")
    lab = start_lab(tmp_path_factory.mktemp("sshlab"))
    yield lab
    close_all()  # live sessions survive the master sshd: close clients first
    lab.stop()


@pytest.fixture(autouse=True)
def _outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process CLI runs must not pick up this repository's own rentcheck settings."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _fresh_connections() -> Iterator[None]:
    """Each test opens its own connections, so counts and failures never leak between tests."""
    close_all()
    yield
    close_all()


@pytest.fixture
def sshd_events(lab: SshLab) -> Callable[[], Callable[[str], int]]:
    """``mark = sshd_events(); ...; mark()("req exec")``: count a box-sshd log line since mark."""

    def mark() -> Callable[[str], int]:
        start = len(lab.box.log_text())

        def count(needle: str) -> int:
            return lab.box.log_text()[start:].count(needle)

        return count

    return mark


@pytest.fixture
def running_script(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start ``bash SCRIPT`` that waits for a go file; every process is stopped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(script: Path, *, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            ["bash", str(script)],
            cwd=script.parent,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        started.append(proc)
        wait_until(lambda: _holds(proc.pid, script), f"bash {script} never opened it")
        # A start time is known to 10 ms; step clearly past it before anyone edits the file.
        time.sleep(0.2)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _holds(pid: int, script: Path) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/fd/255").startswith(os.path.realpath(script))
    except OSError:
        return False

"""The ssh rules' "why", reproduced against a real OpenSSH server on 127.0.0.1: the flagged
command misbehaves the way the rule says, the fixed one (which the rule leaves alone) does not.

The box is this machine seen through sshd, so the test can look at the far side's processes."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.box.sshdkit import sshd_binary, start_lab
from tests.lint.reproduce import flagged, wait_for, write


@pytest.fixture(scope="module")
def ssh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The argv prefix that runs a command on the box: ``[*ssh, "command"]``."""
    if os.geteuid() != 0:
        pytest.skip("the sshd fixture runs sshd as root (it logs in as the current user)")
    if sshd_binary() is None:
        pytest.skip("OpenSSH server missing: apt-get install -y openssh-server")
    lab = start_lab(tmp_path_factory.mktemp("sshlab"))
    try:
        yield ["ssh", "-F", str(lab.ssh_config), "box"]
    finally:
        lab.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; only its parent has not reaped it yet.
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], check=False).returncode == 0


def _kill_matching(marker: str) -> None:
    subprocess.run(["pkill", "-KILL", "-f", marker], check=False)


def test_rc109_background_job_with_output_on_the_session_holds_ssh(
    ssh: list[str], tmp_path: Path
) -> None:
    marker = f"rc109-{os.getpid()}"
    job = f"python3 -c 'import time; time.sleep(600)' {marker}"
    bad = write(tmp_path / "bad.sh", f'#!/usr/bin/env bash\nssh box "nohup {job} &"\n')
    good = write(
        tmp_path / "good.sh",
        f'#!/usr/bin/env bash\nssh box "nohup {job} > job.log 2>&1 < /dev/null &"\n',
    )
    listed = write(
        tmp_path / "listed.sh",
        f'#!/usr/bin/env bash\nssh box "cd /w && nohup {job} > job.log 2>&1 < /dev/null &"\n',
    )
    assert flagged(bad, "RC109") == [2] and not flagged(good, "RC109")
    assert flagged(listed, "RC109") == [2]
    try:
        # nohup redirects nothing when stdout is not a terminal: ssh waits for the job.
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run([*ssh, f"cd {tmp_path} && nohup {job} &"], timeout=6, check=False)
        assert _running(marker)  # connected and started: it is the job that ssh waits for
        _kill_matching(marker)
        done = subprocess.run(
            [*ssh, f"cd {tmp_path}; nohup {job} > job.log 2>&1 < /dev/null &"],
            timeout=60,
            check=False,
        )
        assert done.returncode == 0  # returned while the job runs on
        assert _running(marker)
        _kill_matching(marker)
        # `cd d && job > log &`: the job's own redirects do not help, the subshell that
        # runs the list still holds the session while it waits for the job.
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run(
                [*ssh, f"cd {tmp_path} && nohup {job} > job.log 2>&1 < /dev/null &"],
                timeout=6,
                check=False,
            )
        assert _running(marker)
    finally:
        _kill_matching(marker)


def test_rc109_cut_session_kills_a_job_that_still_writes_to_it(
    ssh: list[str], tmp_path: Path
) -> None:
    pidfile = tmp_path / "job.pid"
    loop = f"sh -c 'echo $$ > {pidfile}; while :; do echo tick; sleep 0.2; done'"
    client = subprocess.Popen([*ssh, f"{loop} &"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "the job")
        pid = int(pidfile.read_text())
        client.send_signal(signal.SIGKILL)  # the connection is cut
        client.wait()
        assert client.stdout is not None
        client.stdout.close()
        wait_for(lambda: not _alive(pid), "the job to die of SIGPIPE")
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        if pidfile.exists() and pidfile.read_text().strip():
            subprocess.run(["kill", "-KILL", pidfile.read_text().strip()], check=False)


def test_rc107_pkill_takes_the_remote_shell_and_the_relaunch_never_runs(
    ssh: list[str], tmp_path: Path
) -> None:
    marker = f"rc107-{os.getpid()}"
    relaunched = tmp_path / "relaunched"
    bad = write(
        tmp_path / "bad.sh",
        f"#!/usr/bin/env bash\nssh box 'pkill -f {marker}; nohup touch {relaunched} &'\n",
    )
    good = write(
        tmp_path / "good.sh",
        f"#!/usr/bin/env bash\nssh box 'pkill -f {marker}'\n"
        f"ssh box 'nohup touch {relaunched} > /dev/null 2>&1 < /dev/null &'\n",
    )
    assert flagged(bad, "RC107") == [2] and not flagged(good, "RC107")
    old_job = subprocess.Popen(
        ["python3", "-c", "import time; time.sleep(600)", marker], stdin=subprocess.DEVNULL
    )
    try:
        subprocess.run([*ssh, f"pkill -f {marker}; touch {relaunched}"], timeout=60, check=False)
        assert old_job.wait(timeout=30) != 0  # the old job was killed ...
        assert not relaunched.exists()  # ... and so was the shell that would relaunch
        subprocess.run([*ssh, f"pkill -f {marker}"], timeout=60, check=False)
        subprocess.run([*ssh, f"touch {relaunched}"], timeout=60, check=True)
        assert relaunched.exists()
    finally:
        if old_job.poll() is None:
            old_job.kill()
            old_job.wait()


def test_rc117_a_hung_probe_stops_ssh_and_timeout_bounds_it(ssh: list[str], tmp_path: Path) -> None:
    """A stand-in for a GPU that fell off the bus: an `nvidia-smi` on the box's PATH that
    never answers (the real one hangs in the driver the same way)."""
    marker = f"rc117-{os.getpid()}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write(
        bin_dir / "nvidia-smi",
        f"#!/bin/sh\nexec python3 -c 'import time; time.sleep(600)' {marker}\n",
    )
    bad = write(
        tmp_path / "bad.sh",
        "#!/usr/bin/env bash\nwhile sleep 60; do\n    ssh box nvidia-smi -q\ndone\n",
    )
    good = write(
        tmp_path / "good.sh",
        "#!/usr/bin/env bash\nwhile sleep 60; do\n    timeout 60 ssh box nvidia-smi -q\ndone\n",
    )
    assert flagged(bad, "RC117") == [3] and not flagged(good, "RC117")
    probe = f"PATH={bin_dir}:$PATH nvidia-smi -q"
    try:
        # The connection is healthy: nothing in ssh gives up on a remote command that hangs.
        with pytest.raises(subprocess.TimeoutExpired):
            subprocess.run(
                [*ssh[:1], "-o", "ServerAliveInterval=1", *ssh[1:], probe], timeout=6, check=False
            )
        assert _running(marker)  # the probe started and hangs: ssh waits on it
        bounded = subprocess.run(["timeout", "3", *ssh, probe], timeout=60, check=False)
        assert bounded.returncode == 124  # the watcher gets control back
    finally:
        _kill_matching(marker)

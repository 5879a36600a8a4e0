"""The ssh rules' "why", reproduced against a real OpenSSH server on 127.0.0.1: the flagged
command misbehaves the way the rule says, the fixed one (which the rule leaves alone) does not.

The box is this machine seen through sshd, so the test can look at the far side's processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.box.sshdkit import sshd_binary, start_lab
from tests.lint.reproduce import bash, flagged, wait_for, write


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


def _transport(tmp_path: Path, ssh: list[str]) -> tuple[Path, Path]:
    """An ssh for scp -S / rsync -e that records its pid: killing it is the dropped link."""
    pidfile = tmp_path / "transport.pid"
    wrapper = write(
        tmp_path / "ssh-transport",
        f'#!/bin/sh\necho $$ > {pidfile}\nexec ssh -F {ssh[2]} "$@"\n',
    )
    return wrapper, pidfile


def _drop_link_when(
    pidfile: Path, client: subprocess.Popen[bytes], folder: Path, glob: str
) -> None:
    """Kill the transport once a file the copy writes (``glob`` in ``folder``: rsync's
    temporary name is random) has some bytes in it."""

    def started() -> bool:
        return any(p.stat().st_size > 64 * 1024 for p in folder.glob(glob))

    try:
        wait_for(started, "the copy")
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        assert client.wait(timeout=60) != 0
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed")
def test_rc115_rsync_without_partial_sends_a_dropped_file_again_from_zero(
    ssh: list[str], tmp_path: Path
) -> None:
    bad = write(tmp_path / "bad.sh", "#!/usr/bin/env bash\nrsync -a box:/ckpt/ ./ckpt/\n")
    good = write(
        tmp_path / "good.sh", "#!/usr/bin/env bash\nrsync -a --partial box:/ckpt/ ./ckpt/\n"
    )
    assert flagged(bad, "RC115") == [2] and not flagged(good, "RC115")
    source = tmp_path / "box" / "last.pt"
    source.parent.mkdir()
    source.write_bytes(os.urandom(4 * 1024 * 1024))
    wrapper, pidfile = _transport(tmp_path, ssh)
    sent_again: dict[str, int] = {}
    for partial in ([], ["--partial"]):
        dest = tmp_path / ("kept" if partial else "dropped")
        dest.mkdir()
        copy = ["rsync", "-a", *partial, "-e", str(wrapper), f"box:{source}", f"{dest}/"]
        # Slowed to 2 MB/s so that the drop comes mid-file.
        client = subprocess.Popen(
            [*copy[:2], "--bwlimit=2000", *copy[2:]], stderr=subprocess.DEVNULL
        )
        _drop_link_when(pidfile, client, dest, ".last.pt.*")
        kept = [p.stat().st_size for p in dest.iterdir()]
        rerun = subprocess.run([*copy, "--stats"], capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        assert (dest / "last.pt").read_bytes() == source.read_bytes()
        literal = next(ln for ln in rerun.stdout.splitlines() if ln.startswith("Literal data"))
        sent_again["--partial" if partial else "plain"] = int(
            literal.split(":")[1].split()[0].replace(",", "")
        )
        # Without --partial the received part was deleted; with it, it stays as the file.
        assert (kept == []) if not partial else (kept and kept[0] > 64 * 1024)
    assert sent_again["plain"] == source.stat().st_size  # every byte crossed the link again
    assert sent_again["--partial"] < source.stat().st_size  # the kept part was not resent


def test_rc115_scp_r_restarts_from_zero_and_copies_what_a_link_points_to(
    ssh: list[str], tmp_path: Path
) -> None:
    bad = write(tmp_path / "bad.sh", "#!/usr/bin/env bash\nscp -r box:/ckpt ./ckpt\n")
    assert flagged(bad, "RC115") == [2]
    tree = tmp_path / "box" / "ckpt"
    tree.mkdir(parents=True)
    (tree / "last.pt").write_bytes(os.urandom(4 * 1024 * 1024))
    (tree / "best.pt").symlink_to(tree / "last.pt")
    wrapper, pidfile = _transport(tmp_path, ssh)
    dest = tmp_path / "pulled"
    dest.mkdir()
    # -O: the scp protocol (OpenSSH before 9.0, and where the box offers no sftp subsystem).
    copy = ["scp", "-O", "-r", "-S", str(wrapper), f"box:{tree}", str(dest)]
    client = subprocess.Popen([*copy[:1], "-l", "16000", *copy[1:]], stderr=subprocess.DEVNULL)
    _drop_link_when(pidfile, client, dest, "ckpt/last.pt")
    rerun = subprocess.run([copy[0], "-v", *copy[1:]], capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    received = next(ln for ln in rerun.stderr.splitlines() if ln.startswith("Transferred:"))
    # Both files came again in full: the part already there counted for nothing, and the
    # link arrived as a second 4 MiB copy.
    assert int(received.split("received ")[1].split()[0]) >= 8 * 1024 * 1024
    assert not (dest / "ckpt" / "best.pt").is_symlink()
    assert (dest / "ckpt" / "best.pt").stat().st_size == 4 * 1024 * 1024


def test_rc118_a_gpu_wait_on_this_machine_proves_nothing_about_the_node(
    ssh: list[str], tmp_path: Path
) -> None:
    """Stand-ins for the two machines: this one's `nvidia-smi` on the script's PATH, and
    the node's, reached over ssh, which answers only once the node's GPUs are up. (`ssh
    "$n"` stands in for `srun -w "$n"`, which needs a Slurm cluster; the rule treats both
    as work started on another node.)"""
    here, node = tmp_path / "here", tmp_path / "node"
    here.mkdir()
    node.mkdir()
    write(here / "ssh", f'#!/bin/sh\nexec /usr/bin/ssh -F {ssh[2]} "$@"\n')
    write(here / "nvidia-smi", "#!/bin/sh\nexit 0\n")  # the batch host: its GPUs are fine
    probes = node / "probes"
    probes.touch()
    write(node / "nvidia-smi", f"#!/bin/sh\necho probe >> {probes}\n[ -e {node}/gpus-up ]\n")
    write(
        node / "worker",
        f"#!/bin/sh\nif {node}/nvidia-smi; then s=ready; else s=not-ready; fi\n"
        f"echo $s > {node}/seen\n",
    )
    loop = (
        "#!/usr/bin/env bash\nfor n in box; do\n    until {probe} > /dev/null 2>&1; do\n"
        '        sleep 0.1\n    done\n    ssh "$n" {node}/worker\ndone\n'
    )
    bad = write(tmp_path / "bad.sh", loop.format(probe="nvidia-smi", node=node))
    good = write(tmp_path / "good.sh", loop.format(probe=f'ssh "$n" {node}/nvidia-smi', node=node))
    assert flagged(bad, "RC118") == [3] and not flagged(good, "RC118")
    env = {"PATH": f"{here}:{os.environ['PATH']}"}
    seen = node / "seen"
    # The node's GPUs are down: the local wait passes at once and the work starts anyway.
    assert bash(bad, cwd=tmp_path, env=env).returncode == 0
    assert seen.read_text().strip() == "not-ready"
    seen.unlink()
    probes.write_text("")
    # Polling the node itself holds the work back until its GPUs are up.
    run = subprocess.Popen(
        ["bash", str(good)], cwd=tmp_path, env={**os.environ, **env}, stdin=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: len(probes.read_text().split()) >= 2, "the node to be polled")
        assert not seen.exists()
        (node / "gpus-up").touch()
        assert run.wait(timeout=60) == 0
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert seen.read_text().strip() == "ready"
    # On a head without GPUs (no nvidia-smi here) the local wait never ends at all.
    (here / "nvidia-smi").unlink()
    with pytest.raises(subprocess.TimeoutExpired):
        bash(bad, cwd=tmp_path, env=env, timeout=3)

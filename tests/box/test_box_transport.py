"""The transport against a real sshd: exit status, both streams, stdin, timeouts, jumps, reuse."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from sshdkit import SshLab, wait_until

from rentcheck.box.transport import Box, LocalBox, open_box
from rentcheck.errors import ConnectError, RemoteTimeout


@pytest.fixture(params=["ssh", "local"])
def box(request: pytest.FixtureRequest) -> Box:
    if request.param == "local":
        return LocalBox()  # runs without sshd too
    lab: SshLab = request.getfixturevalue("lab")
    return open_box("box", ssh_config=str(lab.ssh_config))


def test_exit_status_and_both_streams_are_read(box: Box) -> None:
    result = box.run("echo out; echo oops >&2; exit 7")
    assert (result.exit_status, result.stdout, result.stderr) == (7, b"out\n", b"oops\n")


def test_stdin_arrives_and_big_outputs_cannot_deadlock(box: Box) -> None:
    # 4 MiB on each stream, more than any channel window or pipe buffer, while stdin is fed.
    data = os.urandom(1 << 20)
    script = "cat >/dev/null; head -c 4194304 /dev/zero; head -c 4194304 /dev/zero >&2"
    result = box.run(script, stdin=data)
    assert result.ok and len(result.stdout) == len(result.stderr) == 1 << 22
    echoed = box.run("cat", stdin=data)
    assert echoed.stdout == data


def _sleepers(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                pids.append(int(entry))
    return pids


def test_a_hanging_command_is_killed_on_the_box(box: Box) -> None:
    marker = f"{4000 + os.getpid() % 1000}.{box.name == 'local':d}17"
    with pytest.raises(RemoteTimeout, match="killed there"):
        box.run(f"sleep {marker}; echo never", timeout=1)
    # The server-side `timeout` ends the remote process itself, not just our wait for it.
    wait_until(lambda: not _sleepers(marker), f"sleep {marker} still runs on the box")


def test_one_connection_is_reused_per_host(lab: SshLab, sshd_events) -> None:
    count = sshd_events()
    first = open_box("box", ssh_config=str(lab.ssh_config))
    first.run("true")
    again = open_box("box", ssh_config=str(lab.ssh_config))
    again.run("true")
    assert again is first
    assert (count("Connection from 127.0.0.1"), count("req exec")) == (1, 2)
    assert first.stats.connections == 1 and first.stats.exec_requests == 2


def test_proxyjump_goes_through_the_jump_host(lab: SshLab) -> None:
    before = lab.jump.log_text().count("server_request_direct_tcpip")
    box = open_box("viajump", ssh_config=str(lab.ssh_config))
    assert box.run("echo hi").stdout == b"hi\n"
    assert box.stats.connections == 2  # the jump, then the box through it
    log = lab.jump.log_text()
    assert log.count("server_request_direct_tcpip") == before + 1
    assert f"target 127.0.0.1 port {lab.box.port}" in log


def test_refused_port_is_a_clear_connect_error(lab: SshLab) -> None:
    with pytest.raises(ConnectError, match="connection refused"):
        open_box("box-closed", ssh_config=str(lab.ssh_config))


def test_a_silent_port_fails_within_the_connect_timeout(lab: SshLab, tmp_path: Path) -> None:
    # A socket that accepts (the kernel completes the handshake) but never says SSH-2.0.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        config = tmp_path / "ssh_config"
        config.write_text(lab.host_block("silent", silent.getsockname()[1], lab.known_hosts))
        with pytest.raises(ConnectError, match=r"no SSH (banner|handshake) within 1 s"):
            open_box("silent", ssh_config=str(config), connect_timeout=1)

"""SSH servers that misbehave (tests/box/fakessh.py) and the client-side limits that hold them:
an exec request never answered, endless output, a hung authentication, a hostile banner, a
connection killed mid-command. Plus keys from ssh-agent and ProxyCommand through the shell."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakessh import FakeSshd, fake_sshd
from sshdkit import SshLab, keygen

from rentcheck.box.transport import MAX_OUTPUT, open_box
from rentcheck.errors import ConnectError, RemoteError, RemoteTimeout


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[object]:
    started: list[FakeSshd] = []

    def start(behaviour: str, **kwargs: object) -> Path:
        server = fake_sshd(tmp_path, behaviour, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        if not (tmp_path / "client").exists():
            keygen(tmp_path / "client")
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{server.port} {server.host_pub}\n")
        config = tmp_path / "ssh_config"
        config.write_text(
            f"Host fake\n  HostName 127.0.0.1\n  Port {server.port}\n  User nobody\n"
            f"  IdentityFile {tmp_path / 'client'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n"
        )
        return config

    yield start
    for server in started:
        server.stop()


def test_an_exec_request_the_server_never_answers_times_out(fake) -> None:
    config = fake("hang-exec")
    box = open_box("fake", ssh_config=str(config), connect_timeout=2)
    began = time.monotonic()
    with pytest.raises(RemoteTimeout, match="did not answer the exec request within 2 s"):
        box.run("true", timeout=60)
    assert time.monotonic() - began < 30  # bounded by the client, not by the 60 s command


def test_endless_output_is_capped_with_a_clear_error(fake) -> None:
    config = fake("endless")
    box = open_box("fake", ssh_config=str(config), connect_timeout=5)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with pytest.raises(RemoteError, match=f"printed more than {MAX_OUTPUT >> 20} MiB"):
        box.run("yes", timeout=120)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < 8 * MAX_OUTPUT  # bounded by the cap, not by what the box sends


def test_a_hung_authentication_is_not_reported_as_refused(fake) -> None:
    config = fake("hang-auth")
    with pytest.raises(ConnectError, match="did not finish authentication within 1 s") as err:
        open_box("fake", ssh_config=str(config), connect_timeout=1)
    assert "refused" not in str(err.value)


def test_a_hostile_banner_reaches_the_error_line_escaped(fake, cli) -> None:
    config = fake("hang-exec", banner="SSH-1.\x1b]0;pwned\x07\x1b[2J-evil")
    result = cli("audit", "--host", "fake", "--ssh-config", str(config), "--connect-timeout", "2")
    assert result.code == 2
    assert "\x1b" not in result.err and "\x07" not in result.err
    assert "\\x1b]0;pwned\\x07" in result.err
    assert result.err.count("\n") == 1  # one line, and no paramiko log or traceback


def test_paramiko_log_only_with_debug(fake, cli, capsys) -> None:
    from rentcheck.box.connect import show_ssh_debug
    from rentcheck.cli import main

    config = fake("hang-auth")
    args = ["audit", "--host", "fake", "--ssh-config", str(config), "--connect-timeout", "1"]
    quiet = cli(*args)
    assert quiet.code == 2 and "paramiko" not in quiet.err and quiet.err.count("\n") == 1
    capsys.readouterr()
    try:
        with pytest.raises(ConnectError):
            main([*args, "--debug"])
        assert "paramiko: DEBUG" in capsys.readouterr().err
    finally:
        show_ssh_debug(False)


def _connection_pids(lab: SshLab) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == lab.box.proc.pid:
                pids.append(int(entry))
    return pids


def test_a_connection_killed_mid_command_is_a_clear_remote_error(lab: SshLab) -> None:
    box = open_box("box", ssh_config=str(lab.ssh_config))
    box.run("true")
    pids = _connection_pids(lab)  # this test's own session: the pool was emptied before

    def cut() -> None:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)

    threading.Timer(1.0, cut).start()
    with pytest.raises(RemoteError) as err:
        box.run("sleep 5; echo done", timeout=30)
    text = str(err.value)
    assert "Socket is closed" not in text and "report it" not in text
    assert "box" in text


def test_a_passphrase_key_is_used_through_ssh_agent(
    lab: SshLab, tmp_path: Path, monkeypatch
) -> None:
    key = tmp_path / "id_locked"
    key.write_bytes(lab.client_key.read_bytes())
    key.chmod(0o600)
    key.with_suffix(".pub").write_text(lab.client_key.with_suffix(".pub").read_text())
    subprocess.run(
        ["ssh-keygen", "-q", "-p", "-P", "", "-N", "secret", "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    config = tmp_path / "ssh_config"
    block = lab.host_block("locked", lab.box.port, lab.known_hosts).replace(
        f"IdentityFile {lab.client_key}", f"IdentityFile {key}"
    )
    config.write_text(block)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    with pytest.raises(ConnectError, match=r"passphrase-protected and ssh-agent does not hold it"):
        open_box("locked", ssh_config=str(config))
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(lab.client_key)], env=env, check=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        box = open_box("locked", ssh_config=str(config))
        assert box.run("echo in").stdout == b"in\n"
    finally:
        agent.terminate()
        agent.wait(10)


def test_proxycommand_runs_through_the_shell(lab: SshLab, tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "ssh_config"
    # A variable and a redirection: shell syntax, which `ssh` runs as `$SHELL -c "exec ..."`.
    monkeypatch.setenv("RC_LAB_CONFIG", str(lab.ssh_config))
    proxy = "ssh -F $RC_LAB_CONFIG -W %h:%p jump 2>/dev/null"
    config.write_text(
        f"Include {lab.ssh_config}\n"
        + lab.host_block("viaproxy", lab.box.port, lab.known_hosts, f"  ProxyCommand {proxy}\n")
    )
    box = open_box("viaproxy", ssh_config=str(config))
    assert box.run("echo through").stdout == b"through\n"

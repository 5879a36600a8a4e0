"""A real OpenSSH server on 127.0.0.1 for the box tests and the latency benchmark.

Two sshd instances (the box and a jump host) with throwaway host and client keys, a generated
ssh_config (aliases, a ProxyJump alias, broken-trust aliases) and a private known_hosts. Nothing
outside the given directory is touched except ``/run/sshd``, which sshd itself requires.
Each pytest-xdist worker gets its own servers on free ports.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SSHD_CONFIG = """\
ListenAddress 127.0.0.1
HostKey {hostkey}
PidFile {dir}/sshd.pid
AuthorizedKeysFile {root}/authorized_keys
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers {user}
AllowTcpForwarding yes
UseDNS no
PrintMotd no
PrintLastLog no
LogLevel DEBUG
"""


def sshd_binary() -> str | None:
    found = shutil.which("sshd") or shutil.which("sshd", path="/usr/sbin:/sbin")
    return os.path.abspath(found) if found else None  # sshd re-execs: absolute path needed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rentcheck-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


@dataclass
class Sshd:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    host_pub: str  # "ssh-ed25519 AAAA..."

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        # The per-connection children first, while their parent is still the master: once it
        # has exited they are reparented and can no longer be found by ppid (a session then
        # outlived stop() and a "dropped" pull finished).
        _kill_children(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _kill_children(self.proc.pid)


def _kill_children(pid: int) -> None:
    # Per-connection sshd processes survive their master; end the ones it started (by ppid).
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGTERM)


def _wait_banner(port: int, proc: subprocess.Popen[bytes], deadline: float) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.01)
    return False


def start_sshd(directory: Path, root: Path, name: str, hostkey: Path, host_pub: str) -> Sshd:
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "sshd_config"
    config.write_text(
        SSHD_CONFIG.format(hostkey=hostkey, dir=directory, root=root, user=getpass.getuser())
    )
    binary = sshd_binary()
    assert binary is not None
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    log = directory / "sshd.log"
    for _ in range(5):  # a free port can be taken by someone else before sshd binds it
        port = free_port()
        with open(log, "ab") as handle:
            proc = subprocess.Popen(
                # -E, not -e: with -e, DEBUG lines leak into the sessions' stderr.
                [binary, "-D", "-E", str(log), "-f", str(config), "-p", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=handle,
            )
        if _wait_banner(port, proc, time.monotonic() + 20):
            return Sshd(name, port, proc, log, host_pub)
        proc.kill()
        proc.wait()
    raise RuntimeError(f"sshd would not start; see {log}")


@dataclass
class SshLab:
    """Both servers plus the client-side files a test passes to rentcheck."""

    root: Path
    box: Sshd
    jump: Sshd
    client_key: Path
    known_hosts: Path
    ssh_config: Path
    other_pub: str  # a key that belongs to neither server (for "changed key")
    closed_port: int

    def host_block(self, alias: str, port: int, known_hosts: Path, extra: str = "") -> str:
        return (
            f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {getpass.getuser()}\n"
            f"  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known_hosts}\n  StrictHostKeyChecking yes\n"
            f"  BatchMode yes\n  ConnectTimeout 10\n{extra}"
        )

    def stop(self) -> None:
        self.box.stop()
        self.jump.stop()


def start_lab(root: Path) -> SshLab:
    keys = root / "keys"
    keys.mkdir(parents=True)
    box_pub = keygen(keys / "box_host")
    jump_pub = keygen(keys / "jump_host")
    keygen(keys / "client")
    other_pub = keygen(keys / "other")
    (root / "authorized_keys").write_text((keys / "client.pub").read_text())
    (root / "authorized_keys").chmod(0o600)
    box = start_sshd(root / "box", root, "box", keys / "box_host", box_pub)
    try:
        jump = start_sshd(root / "jump", root, "jump", keys / "jump_host", jump_pub)
    except BaseException:
        box.stop()
        raise
    lab = SshLab(
        root=root,
        box=box,
        jump=jump,
        client_key=keys / "client",
        known_hosts=root / "known_hosts",
        ssh_config=root / "ssh_config",
        other_pub=other_pub,
        closed_port=free_port(),
    )
    lab.known_hosts.write_text(
        f"[127.0.0.1]:{box.port} {box_pub}\n[127.0.0.1]:{jump.port} {jump_pub}\n"
    )
    (root / "known_hosts_empty").write_text("")
    (root / "known_hosts_changed").write_text(f"[127.0.0.1]:{box.port} {other_pub}\n")
    lab.ssh_config.write_text(
        "\n".join(
            (
                lab.host_block("box", box.port, lab.known_hosts),
                lab.host_block("jump", jump.port, lab.known_hosts),
                lab.host_block("viajump", box.port, lab.known_hosts, "  ProxyJump jump\n"),
                lab.host_block("box-unknown", box.port, root / "known_hosts_empty"),
                lab.host_block("box-changed", box.port, root / "known_hosts_changed"),
                lab.host_block("box-closed", lab.closed_port, lab.known_hosts),
            )
        )
    )
    return lab


def wait_until(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Poll a condition with a generous bound (a hang becomes a failure, not a stuck run)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.01)


def linked_tree(root: Path, n: int) -> None:
    """``n`` empty files, 1,000 to a folder: one real file per folder, the others hard links
    to it (a name each, not an inode: cheap to make, and each is still read and hashed)."""
    for d in range(0, n, 1000):
        folder = root / f"step_{d // 1000:05d}"
        folder.mkdir(parents=True)
        seed = folder / f"sample_{d:07d}.png"
        seed.touch()
        for i in range(d + 1, min(n, d + 1000)):
            os.link(seed, folder / f"sample_{i:07d}.png")

"""A small SSH server that misbehaves on purpose (paramiko's server side), for the hostile-box
tests: it never answers an exec request, streams output forever, hangs in authentication, or
announces itself with a hostile banner. Real sockets on 127.0.0.1, a real SSH handshake."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko


class _Server(paramiko.ServerInterface):
    def __init__(self, fake: FakeSshd) -> None:
        self.fake = fake

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        if self.fake.behaviour == "hang-auth":
            self.fake.stop_event.wait(120)
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED

    def check_channel_exec_request(self, channel: Any, command: bytes) -> bool:
        self.fake.commands.append(command)
        if self.fake.behaviour == "hang-exec":
            self.fake.stop_event.wait(120)  # the transport thread blocks: no reply, ever
            return False
        if self.fake.behaviour == "endless":
            threading.Thread(target=self.fake.stream, args=(channel,), daemon=True).start()
        return True


@dataclass
class FakeSshd:
    """Listen on 127.0.0.1; ``behaviour``: hang-exec, endless, hang-auth or banner."""

    behaviour: str
    host_key_path: Path
    banner: str = "SSH-2.0-fake"
    port: int = 0
    commands: list[bytes] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)
    streamed: int = 0

    def start(self) -> FakeSshd:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.key = paramiko.PKey.from_path(self.host_key_path)
        self.transports: list[paramiko.Transport] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return self

    def _accept(self) -> None:
        while not self.stop_event.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            transport = paramiko.Transport(sock)
            transport.local_version = self.banner
            transport.add_server_key(self.key)
            self.transports.append(transport)
            with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
                transport.start_server(server=_Server(self))

    def stream(self, channel: Any) -> None:
        chunk = b"x" * 65536
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            while not self.stop_event.is_set() and not channel.closed:
                self.streamed += channel.send(chunk)

    @property
    def host_pub(self) -> str:
        return f"{self.key.get_name()} {self.key.get_base64()}"

    def stop(self) -> None:
        self.stop_event.set()
        self.listener.close()
        for transport in self.transports:
            transport.close()
        self.thread.join(5)


def fake_sshd(tmp_path: Path, behaviour: str, **kwargs: Any) -> FakeSshd:
    key = tmp_path / "fake_host"
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
            check=True,
            stdin=subprocess.DEVNULL,
        )
    return FakeSshd(behaviour, key, **kwargs).start()

"""Where commands run: ``LocalBox`` (a subprocess here) or ``SSHBox`` (one paramiko connection).

Both run the same shell text the same way: under a server-side ``timeout`` (so a hung command
is killed on the box, not just abandoned), with stdin fed and stdout/stderr drained together (a
big output cannot deadlock) and the exit status always read. Secrets go on stdin only.
``open_box`` keeps one connection per resolved host/port/user for the whole run.
"""

from __future__ import annotations

import math
import os
import select
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rentcheck.errors import RemoteError, RemoteTimeout

if TYPE_CHECKING:
    from rentcheck.box.connect import Connection

__all__ = ["Box", "BoxStats", "CommandResult", "LocalBox", "SSHBox", "close_all", "open_box"]

KILL_AFTER = 5  # seconds between the timeout's TERM and its KILL
CLIENT_GRACE = 15.0  # the client gives up this long after the server-side timeout should have
CHUNK = 1 << 16


@dataclass(frozen=True)
class CommandResult:
    exit_status: int
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def stderr_tail(self, limit: int = 300) -> str:
        return " ".join(self.stderr.decode("utf-8", "replace").split())[-limit:]


@dataclass
class BoxStats:
    """What a box did on the wire: proof that an audit is one connection, one exec."""

    connections: int = 0
    exec_requests: int = 0
    seconds: list[float] = field(default_factory=list)


def wrap_command(script: str, timeout: float) -> str:
    """``script`` under a server-side ``timeout`` (GNU/busybox), or bare where the box lacks it.

    The login shell only sees ``exec sh -c '...' '...'``, which bash, zsh and fish all parse
    alike; everything else runs in ``sh``.
    """
    limit = max(1, math.ceil(timeout))
    dispatch = (
        "if command -v timeout >/dev/null 2>&1; then "
        f'exec timeout -k {KILL_AFTER} {limit} sh -c "$0"; fi; exec sh -c "$0"'
    )
    return f"exec sh -c {shlex.quote(dispatch)} {shlex.quote(script)}"


class Box:
    """A place to run shell text. ``name`` is the alias, or ``local``."""

    name: str
    stats: BoxStats

    def run(
        self, script: str, *, stdin: bytes = b"", timeout: float = 60.0, label: str = ""
    ) -> CommandResult:
        """Run shell text; ``label`` names it in a timeout error (default: its first words)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection (a no-op for the local box)."""

    def _check_timeout(self, result: CommandResult, label: str, timeout: float) -> CommandResult:
        # 124: `timeout` fired (TERM); 137 after the limit: it had to KILL.
        fired = result.exit_status == 124 or (
            result.exit_status == 137 and result.seconds >= timeout
        )
        if fired:
            raise RemoteTimeout(
                f"{label} ran past {timeout:g} s on {self.name} and was killed there",
                hint="raise the timeout (audit: [tool.rentcheck.audit] timeout) or find the hang",
            )
        self.stats.seconds.append(result.seconds)
        return result


class LocalBox(Box):
    """This machine; the command runs in a new session so a timeout kills all of it."""

    def __init__(self) -> None:
        self.name = "local"
        self.stats = BoxStats()

    def run(
        self, script: str, *, stdin: bytes = b"", timeout: float = 60.0, label: str = ""
    ) -> CommandResult:
        start = time.monotonic()
        self.stats.exec_requests += 1
        proc = subprocess.Popen(
            ["sh", "-c", wrap_command(script, timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(stdin, timeout=timeout + CLIENT_GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RemoteTimeout(f"local command ran past {timeout:g} s and was killed") from None
        result = CommandResult(proc.returncode, out, err, time.monotonic() - start)
        return self._check_timeout(result, label or _label(script), timeout)


class SSHBox(Box):
    """One authenticated SSH connection; every ``run`` is one exec channel on it."""

    def __init__(self, connection: Connection) -> None:
        self.name = connection.spec.alias
        self.connection = connection
        self.stats = BoxStats(connections=connection.handshakes)

    def run(
        self, script: str, *, stdin: bytes = b"", timeout: float = 60.0, label: str = ""
    ) -> CommandResult:
        import paramiko

        start = time.monotonic()
        try:
            channel = self.connection.transport.open_session(timeout=CLIENT_GRACE)
            self.stats.exec_requests += 1
            channel.exec_command(wrap_command(script, timeout))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise RemoteError(
                f"cannot start a command on {self.name}: {exc}",
                hint="the connection dropped; run again",
            ) from exc
        try:
            out, err = _pump(channel, stdin, start + timeout + CLIENT_GRACE)
            if out is None:
                raise RemoteTimeout(
                    f"{self.name} stopped answering {timeout + CLIENT_GRACE:g} s into a command",
                    hint="the box or the network hangs; the server-side timeout should end it",
                )
            status = channel.recv_exit_status()
        finally:
            channel.close()
        # -1: the server sent no exit status (the command died from a signal).
        result = CommandResult(
            255 if status < 0 else status, out, err or b"", time.monotonic() - start
        )
        return self._check_timeout(result, label or _label(script), timeout)

    def close(self) -> None:
        self.connection.close()


def _label(script: str) -> str:
    return "`" + " ".join(script.split())[:60] + "`"


def _pump(channel: Any, stdin: bytes, deadline: float) -> tuple[bytes | None, bytes | None]:
    """Feed stdin and drain both streams until the channel closes; (None, None) at deadline."""
    out: list[bytes] = []
    err: list[bytes] = []
    view = memoryview(stdin)
    sent = 0
    if not view:
        channel.shutdown_write()
    while True:
        busy = False
        if sent < len(view) and channel.send_ready():
            sent += channel.send(bytes(view[sent : sent + CHUNK]))
            if sent == len(view):
                channel.shutdown_write()
            busy = True
        while channel.recv_ready():
            out.append(channel.recv(CHUNK))
            busy = True
        while channel.recv_stderr_ready():
            err.append(channel.recv_stderr(CHUNK))
            busy = True
        if channel.exit_status_ready() and (channel.eof_received or channel.closed):
            if not (channel.recv_ready() or channel.recv_stderr_ready()):
                return b"".join(out), b"".join(err)
            continue
        if time.monotonic() > deadline:
            return None, None
        if not busy:
            # The channel's fd wakes on stdout data and on close; stderr is polled.
            select.select([channel], [], [], 0.02)


_POOL: dict[tuple[str, int, str], SSHBox] = {}
_LOCAL: list[LocalBox] = []


def open_box(
    host: str, *, ssh_config: str | None = None, connect_timeout: float | None = None
) -> Box:
    """The box for ``host`` (``local`` or an ssh alias), reusing this run's open connection."""
    if host == "local":
        if not _LOCAL:
            _LOCAL.append(LocalBox())
        return _LOCAL[0]
    from rentcheck.box.sshconfig import resolve_host

    spec = resolve_host(host, ssh_config)
    box = _POOL.get(spec.cache_key)
    if box is None:
        try:
            import paramiko  # noqa: F401 - only to fail early and clearly without the extra
        except ImportError as exc:
            from rentcheck.errors import UsageError

            raise UsageError(
                "reaching a box over SSH needs paramiko", hint="pip install 'rentcheck[ssh]'"
            ) from exc
        from rentcheck.box.connect import open_connection

        box = SSHBox(open_connection(spec, connect_timeout))
        _POOL[spec.cache_key] = box
    return box


def close_all() -> None:
    """Close every pooled connection (the end of a CLI run or a pytest session)."""
    while _POOL:
        _, box = _POOL.popitem()
        box.close()
    _LOCAL.clear()

"""Where commands run: ``LocalBox`` (a subprocess here) or ``SSHBox`` (one paramiko connection).

Both run the same shell text the same way: under a server-side ``timeout`` (so a hung command
is killed on the box, not just abandoned), with stdin fed and stdout/stderr drained together (a
big output cannot deadlock) and the exit status always read. Secrets go on stdin only.
``open_box`` keeps one connection per resolved host/port/user for the whole run.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rentcheck.errors import RemoteError, RemoteTimeout

if TYPE_CHECKING:
    from rentcheck.box.connect import Connection

__all__ = [
    "Box",
    "BoxStats",
    "CommandResult",
    "LocalBox",
    "SSHBox",
    "close_all",
    "close_host",
    "open_box",
]

KILL_AFTER = 5  # seconds between the timeout's TERM and its KILL
CLIENT_GRACE = 15.0  # the client gives up this long after the server-side timeout should have
CHUNK = 1 << 16
MAX_OUTPUT = 16 << 20  # bytes of stdout + stderr one command may print: a box can stream forever


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

        label = label or _label(script)
        start = time.monotonic()
        # The server must answer the channel open and the exec request promptly; a box that
        # never does would otherwise hang us forever (paramiko waits without a limit).
        answer = self.connection.timeout
        broken = (paramiko.SSHException, OSError, EOFError)
        try:
            channel = self.connection.transport.open_session(timeout=answer)
            self.stats.exec_requests += 1
            _exec_within(channel, wrap_command(script, timeout), answer, self.name)
        except broken as exc:
            raise RemoteError(
                f"cannot start {label} on {self.name}: {_reason(exc)}",
                hint="the connection dropped or the box refused the command; run again",
            ) from exc
        try:
            out, err = _pump(channel, stdin, start + timeout + CLIENT_GRACE)
            status = channel.recv_exit_status()
            if status < 0 and not self.connection.transport.is_active():
                raise EOFError("the connection closed before the command's exit status came")
        except broken as exc:
            raise RemoteError(
                f"the connection to {self.name} dropped during {label}: {_reason(exc)}",
                hint="check the box is still up and run again",
            ) from exc
        except _Deadline:
            raise RemoteTimeout(
                f"{self.name} stopped answering {timeout + CLIENT_GRACE:g} s into {label}",
                hint="the box or the network hangs; the server-side timeout should end it",
            ) from None
        except _TooMuch:
            raise RemoteError(
                f"{label} on {self.name} printed more than {MAX_OUTPUT >> 20} MiB; "
                "stopped reading and closed it",
                hint="a login script or the box streams output endlessly; look at it with ssh",
            ) from None
        finally:
            # on a connection the box already dropped, closing raises too (EOFError): the
            # error that says what happened is the one above
            with contextlib.suppress(*broken):
                channel.close()
        # -1: the server sent no exit status (the command died from a signal).
        result = CommandResult(255 if status < 0 else status, out, err, time.monotonic() - start)
        return self._check_timeout(result, label, timeout)

    def close(self) -> None:
        self.connection.close()


def _label(script: str) -> str:
    return "`" + " ".join(script.split())[:60] + "`"


class _Deadline(Exception):
    """The client-side deadline of a command passed."""


class _TooMuch(Exception):
    """The command's output passed MAX_OUTPUT."""


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return "the connection is closed" if text == "Socket is closed" else text


def _exec_within(channel: Any, command: str, limit: float, name: str) -> None:
    """``channel.exec_command`` with a deadline: paramiko itself waits for the reply forever."""
    failure: list[BaseException] = []

    def send() -> None:
        try:
            channel.exec_command(command)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=send, name="rentcheck-exec", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        channel.close()  # wakes the waiting thread with "Channel closed"
        worker.join(5)
        raise RemoteTimeout(
            f"{name} accepted the connection but did not answer the exec request within "
            f"{limit:g} s",
            hint="the box's sshd hangs (overloaded or broken); try again or restart the box",
        )
    if failure:
        raise failure[0]


def _pump(channel: Any, stdin: bytes, deadline: float) -> tuple[bytes, bytes]:
    """Feed stdin and drain both streams until the channel closes.

    Raises _Deadline at ``deadline`` and _TooMuch past MAX_OUTPUT bytes of output in all.
    """
    out: list[bytes] = []
    err: list[bytes] = []
    size = 0
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
        for ready, recv, into in (
            (channel.recv_ready, channel.recv, out),
            (channel.recv_stderr_ready, channel.recv_stderr, err),
        ):
            while ready():
                data = recv(CHUNK)
                size += len(data)
                if size > MAX_OUTPUT:
                    raise _TooMuch
                into.append(data)
                busy = True
        if channel.exit_status_ready() and (channel.eof_received or channel.closed):
            if not (channel.recv_ready() or channel.recv_stderr_ready()):
                return b"".join(out), b"".join(err)
            continue
        if time.monotonic() > deadline:
            raise _Deadline
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


def close_host(host: str, *, ssh_config: str | None = None) -> None:
    """Close the pooled connection to ``host`` only: under ``--hosts`` the other hosts' pool
    threads keep theirs (``local`` holds no connection)."""
    if host == "local":
        return
    from rentcheck.box.sshconfig import resolve_host

    box = _POOL.pop(resolve_host(host, ssh_config).cache_key, None)
    if box is not None:
        box.close()


def close_all() -> None:
    """Close every pooled connection (the end of a CLI run or a pytest session)."""
    while _POOL:
        _, box = _POOL.popitem()
        box.close()
    _LOCAL.clear()

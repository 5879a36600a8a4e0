"""Relaunches from a warmed interpreter: one fork server per resume chain (``zygote_serve.py``).

A launch of ``python script.py ...`` spends most of its time importing torch and the
framework; a relaunch of the identical command imports the same modules again. The fork server
is started with the run's interpreter, working directory and environment and imports, ahead of
time, only what a cold run imports before anything of the user's code could change the outcome:

* the script's *leading* import statements (up to its first other statement, or its first
  import of a project module), which are the first thing a cold run executes;
* what the uninterrupted (cold) reference run had imported by its first optimizer step, in
  its order, each module only where it resolves to the file the cold run loaded, with the
  environment changes its own code made in between replayed at the same points (and undone
  after: the relaunch's code makes them again).

Each relaunch is then a ``fork()`` of that server, which takes the run's session, output pipe,
environment and ``sys.argv`` and executes the script as ``__main__``. It is not used for other
command shapes (``-m``, interpreter flags, launchers, shell scripts), when the server has a
Python thread of its own after preloading (a fork would lose it), or with
``fork-server: off``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from rentcheck.payload import SERVER_PATH
from rentcheck.run.process import SHIM_PREFIX, Launch

__all__ = ["ForkServer", "ForkedProcess", "Learned", "fork_script", "leading_imports"]

# Per-run files and switches: everything else of a run's environment is the server's.
PER_RUN = tuple(SHIM_PREFIX + k for k in ("REPORT", "RELEASE", "PAUSE", "STOP_AFTER", "MODULES"))
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_BOOT = (
    "import sys;p=sys.argv[1];"
    "exec(compile(open(p,'rb').read(),p,'exec'),{'__name__':'_rentcheck_zygote'})"
)
START_TIMEOUT_S = 600.0
# CPython 3.11's parser is not safe from two threads at once (chains start side by side):
# "SystemError: AST constructor recursion depth mismatch".
_PARSING = threading.Lock()


def fork_script(argv: Sequence[str], cwd: str) -> str | None:
    """The script of a ``python script.py ...`` command line (a file under ``cwd``), else None."""
    if len(argv) < 2 or not _PYTHON.match(os.path.basename(argv[0])):
        return None
    script = argv[1]
    if script.startswith("-") or not script.endswith(".py"):
        return None
    return script if os.path.isfile(os.path.join(cwd, script)) else None


def leading_imports(path: str) -> list[dict[str, Any]]:
    """The imports a cold run of ``path`` executes before anything else (preload entries)."""
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        with _PARSING:
            tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, SystemError):
        return []  # the run itself reports a broken script
    here = os.path.dirname(os.path.abspath(path))

    def project(name: str) -> bool:
        top = name.partition(".")[0]
        return os.path.exists(os.path.join(here, top + ".py")) or os.path.isdir(
            os.path.join(here, top)
        )

    entries: list[dict[str, Any]] = []
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            if any(project(n) for n in names):
                break
            entries += [{"name": n} for n in names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "__future__":
                continue
            if project(node.module):
                break
            attrs = [alias.name for alias in node.names if alias.name != "*"]
            entries.append({"name": node.module, "attrs": attrs})
        else:
            break
    return entries


class Learned:
    """What the cold reference run had imported, once it reported it (or ended without)."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self.modules: list[dict[str, Any]] = []

    def offer(self, events: Sequence[dict[str, Any]]) -> None:
        for event in events:
            if event.get("e") == "modules" and not self._ready.is_set():
                self.modules = [m for m in event.get("modules") or () if isinstance(m, dict)]
                self._ready.set()

    def finish(self) -> None:
        self._ready.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the reference said (or ended) within ``timeout``."""
        return self._ready.wait(timeout)


class ForkServer:
    """The warmed interpreter of one chain; ``spawn`` starts a run as a fork of it."""

    def __init__(self, template: Launch, script: str) -> None:
        self.template = template
        self.usable = True
        self.threads = 0
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in template.full_env().items() if k not in PER_RUN}
        script_dir = os.path.dirname(os.path.realpath(os.path.join(template.cwd, script)))
        log = os.path.join(template.state_dir, f"{template.name}.log")
        with open(log, "wb") as errors:
            self._proc = subprocess.Popen(
                [template.argv[0], "-c", _BOOT, SERVER_PATH, str(theirs.fileno()), script_dir],
                cwd=template.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=errors,
                stderr=errors,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        theirs.close()
        self._server_env = env
        self._preloaded_learned = False
        self.warmup_s = 0.0  # how long the leading imports took (a measure of import cost)

    @classmethod
    def start(cls, template: Launch) -> ForkServer | None:
        """A server for runs like ``template``, its leading imports loaded; None if the
        command is not ``python script.py`` or the server cannot be used."""
        script = fork_script(template.argv, template.cwd)
        if script is None or not template.shim or not template.state_dir:
            return None
        try:
            server = cls(template, script)
        except OSError:
            return None
        started = time.monotonic()
        if server.preload(leading_imports(os.path.join(template.cwd, script))):
            server.warmup_s = time.monotonic() - started
            return server
        server.close()
        return None

    def preload(self, modules: Sequence[dict[str, Any]]) -> bool:
        if not self.usable:
            return False
        path = os.path.join(self.template.state_dir, f"{self.template.name}.preload.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(list(modules), handle)
        reply = self._request({"op": "preload", "file": path}, timeout=START_TIMEOUT_S)
        self.threads = int(reply.get("threads", 0)) if reply else 0
        # A thread of the server's own (started by an import) would be missing in a fork.
        self.usable = reply is not None and self.threads == 1
        return self.usable

    def preload_learned(self, learned: Learned, timeout: float | None) -> None:
        """Once per server: what the reference run imported, if it says within ``timeout``
        (a reference that prepares data for long before its first step does not hold the
        chain up: its next run gets them)."""
        if not self._preloaded_learned and learned.wait(timeout):
            self._preloaded_learned = True
            self.preload(learned.modules)

    def spawn(self, launch: Launch) -> ForkedProcess:
        env = launch.full_env()
        read, write = os.pipe()
        request = {
            "op": "fork",
            "argv": list(launch.argv),
            "cwd": launch.cwd,
            "env": {k: v for k, v in env.items() if self._server_env.get(k) != v},
            "unset": [k for k in self._server_env if k not in env],
        }
        try:
            self._sock.sendmsg(
                [json.dumps(request).encode()],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(_ints([write]))))],
            )
        finally:
            os.close(write)
        reply = self.receive(START_TIMEOUT_S)
        if reply is None or "pid" not in reply:
            os.close(read)
            self.usable = False
            raise OSError("the fork server did not start the run")
        return ForkedProcess(self, int(reply["pid"]), os.fdopen(read, "rb", buffering=0))

    def receive(self, timeout: float | None) -> dict[str, Any] | None:
        """The server's next message; None on timeout; EOFError when it is gone."""
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            return None
        data = self._sock.recv(1 << 16)
        if not data:
            self.usable = False
            raise EOFError("the fork server exited")
        message = json.loads(data.decode())
        return message if isinstance(message, dict) else {}

    def _request(self, message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        try:
            self._sock.send(json.dumps(message).encode())
            return self.receive(timeout)
        except (OSError, EOFError, ValueError):
            return None

    def close(self) -> None:
        self.usable = False
        self._sock.close()  # the server exits at end of input
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()


def _ints(values: list[int]) -> Any:
    import array

    return array.array("i", values)


class ForkedProcess:
    """A run forked by the server: the part of ``subprocess.Popen`` that ``supervise`` uses."""

    def __init__(self, server: ForkServer, pid: int, stdout: IO[bytes]) -> None:
        self.server, self.pid = server, pid
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                message = self.server.receive(left)
            except (EOFError, OSError, ValueError):
                # The server is gone: so is the run's report of its end; end the run too.
                with _quiet():
                    os.killpg(self.pid, signal.SIGKILL)
                self.returncode = -signal.SIGKILL
                break
            if message is None:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            if message.get("pid") == self.pid and "returncode" in message:
                self.returncode = int(message["returncode"])
        return self.returncode


def _quiet() -> Any:
    import contextlib

    return contextlib.suppress(ProcessLookupError, PermissionError)

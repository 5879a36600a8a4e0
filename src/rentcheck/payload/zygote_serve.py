"""rentcheck's fork server: one warmed interpreter per resume chain, so that a relaunch does
not pay the framework's imports again (torch alone takes seconds; transformers more).

Started by ``rentcheck.run.forking`` as ``python -c BOOT serve.py FD SCRIPT_DIR`` with the
interpreter, working directory and environment the chain's runs get (minus the per-run
``RENTCHECK_SHIM_*`` files), it reads requests, one message each, from the seqpacket socket
``FD``:

* ``preload`` (a JSON file of modules): import them as the cold run did: the script's leading
  imports, and what the uninterrupted run had imported before it first changed its
  environment, each only where it resolves to the very file the cold run loaded;
* ``fork`` (with the run's output pipe attached): fork; the child takes a session of its own,
  the pipe as stdout/stderr, the run's working directory, environment and ``sys.argv``, and
  executes the script as ``__main__`` exactly as ``python script.py`` would; the server
  answers the child's pid, then its exit status (negative: killed by that signal).

Like the shim it runs in the user's interpreter: stdlib only, Python 3.8 syntax.
"""

from __future__ import annotations

import array
import gc
import json
import os
import socket
import sys
from typing import Any

_MAX_MESSAGE = 1 << 16


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


def _receive(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    fds = array.array("i")
    data, ancillary, _flags, _address = sock.recvmsg(_MAX_MESSAGE, socket.CMSG_SPACE(4 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        return None, list(fds)
    return json.loads(data.decode()), list(fds)


def _preload(entries: list[dict[str, Any]]) -> int:
    """Import ``entries`` in order; ``{"env": KEY, "value": V}`` entries replay an environment
    change the cold run's own code made at that point (undone at the end: the run's code
    makes it again). Returns how many modules are loaded."""
    import importlib.util

    loaded = 0
    replayed: dict[str, str | None] = {}
    for entry in entries:
        if "env" in entry:
            key = str(entry["env"])
            replayed.setdefault(key, os.environ.get(key))
            _setenv(key, entry.get("value"))
            continue
        name = str(entry["name"])
        want = entry.get("file")
        try:
            if name not in sys.modules and want is not None:
                spec = importlib.util.find_spec(name)
                if spec is None or spec.origin != want:
                    continue  # another file than the cold run's: leave it to the run
            __import__(name, fromlist=list(entry.get("attrs") or ()))
            loaded += 1
        except (Exception, SystemExit):  # noqa: BLE001, S112 - the run itself meets the error
            continue
    for key, value in replayed.items():
        _setenv(key, value)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    return loaded


def _setenv(key: str, value: Any) -> None:
    if value is None:
        os.environ.pop(key, None)
        os.unsetenv(key)  # also where only os.putenv had set it
    else:
        os.environ[key] = str(value)


def _threads() -> int:
    """Python threads, this one included (native pools of torch and OpenBLAS register fork
    handlers; another Python thread would be missing in the fork with any lock it held)."""
    import threading

    return threading.active_count()


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _become_run(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> str:
    """In the forked child: take the run's place; returns the script to execute."""
    sock.close()
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[0], 2)
    for fd in (null, *fds):
        os.close(fd)
    os.chdir(request["cwd"])
    # The server's environment is the run's (after any sitecustomize) minus the per-run shim
    # files; only those are set here.
    for key in request.get("unset") or ():
        os.environ.pop(key, None)
    os.environ.update(request.get("env") or {})
    argv = list(request["argv"])
    sys.argv[:] = argv[1:]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = argv
    shim = sys.modules.get("sitecustomize")
    forked = getattr(shim, "rentcheck_forked", None)
    if callable(forked):
        forked()
    return os.path.abspath(str(argv[1]))


def _run_script(path: str) -> None:
    """Execute ``path`` in ``__main__`` as ``python path`` does, then end like the interpreter
    (``_end``)."""
    import builtins
    import importlib.machinery

    main = sys.modules["__main__"]
    namespace = main.__dict__
    namespace.clear()
    namespace.update(
        __name__="__main__",
        __doc__=None,
        __package__=None,
        __spec__=None,
        __file__=path,
        __cached__=None,
        __builtins__=builtins,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
    )
    with open(path, "rb") as handle:
        source = handle.read()
    code = 0
    try:
        code_object = compile(source, path, "exec", dont_inherit=True)
        exec(code_object, namespace)  # noqa: S102 - the user's own command, as typed
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - reported as the interpreter does
        trace = exc.__traceback__
        # The traceback starts in the script, as without the server (the hook prints the
        # exception's own traceback).
        exc.__traceback__ = trace.tb_next if trace is not None else None
        sys.excepthook(type(exc), exc, exc.__traceback__)
        if isinstance(exc, KeyboardInterrupt):
            _end(namespace, -1)
        code = 1
    _end(namespace, code)


def _exit_status(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def _end(namespace: dict[str, Any], code: int) -> None:
    """The interpreter's exit, minus tearing down the modules inherited from the server (that
    would copy every page of them, seconds for torch): non-daemon threads are joined, atexit
    handlers run, the script's globals are released (their ``__del__`` and file flushes
    happen), std streams are flushed."""
    import atexit
    import gc
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        shutdown()
    atexit._run_exitfuncs()
    namespace.clear()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - as the interpreter, a closed stream is not an error here
            stream.flush()
        except Exception:  # noqa: BLE001, S110
            pass
    if code < 0:  # an uncaught KeyboardInterrupt ends the process by SIGINT, as Python does
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def serve(fd: int, script_dir: str) -> str | None:
    """Answer requests until the client closes; in a forked child, the script to run."""
    sys.path[0] = script_dir  # `python -c` put '' there; `python script.py` puts this
    sock = socket.socket(fileno=fd)
    while True:
        request, fds = _receive(sock)
        if request is None:
            return None
        if request.get("op") == "preload":
            with open(request["file"], encoding="utf-8") as handle:
                loaded = _preload(list(json.load(handle)))
            _send(sock, {"op": "preloaded", "loaded": loaded, "threads": _threads()})
            continue
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        gc.freeze()  # the fork's collections skip what it inherits (no copy of those pages)
        pid = os.fork()
        if pid == 0:
            return _become_run(sock, request, fds)
        for passed in fds:
            os.close(passed)
        _send(sock, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        gc.unfreeze()
        _send(sock, {"pid": pid, "returncode": _exit_code(status)})


def _main() -> None:
    script = serve(int(sys.argv[2]), sys.argv[3])
    if script is None:
        os._exit(0)  # nothing to flush; tearing torch down would take seconds
    _run_script(script)


_main()

"""Map a function over items in forked worker processes (Linux), without multiprocessing.

Lint's ``fork_map``: a cold ``rentcheck check`` of a few hundred files lasts a fraction of a
second, so the pool's own start-up counts. (Verify's small-file pool, minutes long, uses
``concurrent.futures``.)

Measured again for the gate-pipeline issue (2026-12; a shared 2-core machine; median and
best of 21 fresh processes, after the CLI's own imports), from nothing to two trivial tasks
answered and the workers reaped: ``multiprocessing.Pool`` 142 ms of wall time (best 65) and
39 ms of the parent's CPU; ``concurrent.futures.ProcessPoolExecutor`` (fork) 94 ms (best 35)
and 37 ms CPU, of which importing ``concurrent.futures.process`` is 29 ms (best 22; the
earlier 87 ms was not reproduced); this module 18.5 ms (best 10) and 10 ms CPU. A warm
``rentcheck check`` is 100-120 ms of CPU on that machine, so this stays on the lint path. It
needs ``os`` and ``pickle`` only.

- The parent writes every task's number, 4 bytes each, into one pipe before it forks. Each
  worker reads one number at a time from that pipe, so a worker that finishes early takes the
  next task, largest first, and the workers finish together. (Linux reads a whole 4-byte
  record under the pipe's lock; the numbers fill one page at most, which fits any pipe.)
- A worker inherits the function and the items (nothing is pickled on the way out), sends its
  results back as one pickle on a pipe of its own and leaves with ``os._exit``: whatever
  happens in it, even an interrupt, it never returns into the caller's code, and none of the
  parent's exit handlers run in it. A worker whose parent is gone stops at its next task.
- Answers are read as they arrive. An exception in a worker is raised again in the parent at
  once, with the worker's traceback as its cause, and the other workers are stopped; a worker
  that dies or answers with something unreadable is a ``WorkerError`` that says how it ended.
- When a process limit refuses a fork, the workers already started do all the tasks (or the
  parent, if none started).

The pickles are our own results from our own children: no untrusted data is unpickled.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

__all__ = ["WorkerError", "fork_map"]

_RECORD = 4  # bytes per task number
_MAX_TASKS = 4096 // _RECORD  # one page: what the smallest pipe holds without blocking
_FAILED = 1  # a worker's exit status when it sends back an exception


class WorkerError(RuntimeError):
    """A worker process ended without a readable answer."""


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, shown as the cause in the parent."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def fork_map(
    function: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    order: Sequence[int] | None = None,
) -> list[R]:
    """``[function(item) for item in items]``, computed by ``workers`` forked processes.

    ``order`` is the order in which to hand out the items (e.g. largest first); the results
    are always in the order of ``items``.
    """
    import pickle  # noqa: F401 - imported once here, before the fork, not in every worker

    count = len(items)
    if count == 0:
        return []
    order = list(range(count)) if order is None else list(order)
    per_task = -(-count // _MAX_TASKS)  # ceiling: at most _MAX_TASKS tasks
    tasks = [order[i : i + per_task] for i in range(0, count, per_task)]
    task_read, task_write = os.pipe()
    try:
        os.write(task_write, b"".join(n.to_bytes(_RECORD, "little") for n in range(len(tasks))))
    except BaseException:
        os.close(task_read)
        raise
    finally:
        os.close(task_write)  # workers see the end of the tasks once they are all taken
    _flush_std_streams()  # else each child would hold, and might write, a copy of the buffers
    children: list[tuple[int, int]] = []  # (pid, read end of its result pipe), not yet reaped
    try:
        try:
            for _ in range(max(1, min(workers, len(tasks)))):
                if not _start(function, items, tasks, task_read, children):
                    break  # a process limit (a container's pids.max): go on with fewer
        finally:
            os.close(task_read)
        if not children:
            return [function(item) for item in items]  # no process could be started
        return _gather(children, count)
    finally:
        for pid, fd in children:  # only left when the parent is interrupted or fails
            with contextlib.suppress(OSError):
                os.close(fd)
            stop_child(pid)


def _start(
    function: Callable[[T], R],
    items: Sequence[T],
    tasks: list[list[int]],
    task_fd: int,
    children: list[tuple[int, int]],
) -> bool:
    """Fork one worker and add it to ``children``; False when the system refuses the fork."""
    import signal

    result_read, result_write = os.pipe()
    parent = os.getpid()
    # Signals to this thread wait until the worker is in ``children``: a Ctrl-C between fork()
    # returning and that would leave a worker that nobody stops or reaps. A pending one is
    # raised after. (The CLI has no other thread that could take a signal meanwhile.)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        try:
            pid = os.fork()
        except OSError:
            os.close(result_read)
            os.close(result_write)
            return False
        if pid == 0:  # the worker: from here on, only os._exit leaves
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                os.close(result_read)
                for _pid, inherited in children:
                    os.close(inherited)
                _serve(function, items, tasks, task_fd, result_write, parent=parent)
            except BaseException as exc:  # noqa: BLE001 - before serving: still tell the parent
                with contextlib.suppress(BaseException):
                    write_all(result_write, pickled_failure(exc))
            finally:
                os._exit(_FAILED)
        children.append((pid, result_read))
        os.close(result_write)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return True


def _gather(children: list[tuple[int, int]], count: int) -> list[R]:
    """The workers' answers, read as they come (``poll``): a worker that fails is reported
    at once, and fork_map stops the others, rather than after the ones before it finish.
    ``children`` keeps the workers not yet reaped."""
    import select

    results: list[R | None] = [None] * count
    received: dict[int, list[bytes]] = {fd: [] for _pid, fd in children}
    poller = select.poll()
    for fd in received:
        poller.register(fd, select.POLLIN)  # POLLHUP comes unasked: the end of an answer
    while received:
        for fd, _event in poller.poll():
            chunk = os.read(fd, 1 << 20)
            if chunk:
                received[fd].append(chunk)
                continue
            poller.unregister(fd)
            pid = next(p for p, f in children if f == fd)
            children.remove((pid, fd))
            os.close(fd)
            try:
                status: int | None = os.waitpid(pid, 0)[1]
            except ChildProcessError:  # SIGCHLD ignored: the kernel reaped it, status unknown
                status = None
            ok, value, remote = _answer(b"".join(received.pop(fd)), status)
            if not ok:  # the others are stopped by fork_map
                raise value from _RemoteTraceback(remote)
            for index, result in value:
                results[index] = result
    return results  # type: ignore[return-value]  # every index was filled


def _answer(payload: bytes, status: int | None) -> tuple[bool, Any, str]:
    """What a worker sent: (True, results, "") or (False, exception, its traceback)."""
    import pickle

    clean = status is None or (os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, _FAILED))
    if not clean or not payload:
        raise WorkerError(f"a worker process {describe_end(status)} before it answered")
    try:
        ok, value, remote = pickle.loads(payload)  # noqa: S301 - our own child's answer
    except Exception as exc:
        raise WorkerError(
            f"a worker process {describe_end(status)} with an unreadable answer"
        ) from exc
    return bool(ok), value, str(remote)


def _serve(
    function: Callable[[T], R],
    items: Sequence[T],
    tasks: list[list[int]],
    task_fd: int,
    result_fd: int,
    *,
    parent: int,
) -> NoReturn:
    """The worker's whole life: take tasks until there are none, answer, exit."""
    import pickle

    code = 0
    try:
        try:
            done = []
            while (task := _next_task(task_fd)) is not None:
                if os.getppid() != parent:
                    break  # the parent is gone: nobody will read the answer
                for index in tasks[task]:
                    done.append((index, function(items[index])))
            payload = pickle.dumps((True, done, ""), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            code = _FAILED
            payload = pickled_failure(exc)
        _flush_std_streams()  # what the function printed, before os._exit drops it
        write_all(result_fd, payload)
    finally:
        os._exit(code)


def _next_task(fd: int) -> int | None:
    record = b""
    while len(record) < _RECORD:
        chunk = os.read(fd, _RECORD - len(record))
        if not chunk:
            return None
        record += chunk
    return int.from_bytes(record, "little")


def pickled_failure(exc: BaseException) -> bytes:
    """The exception and its traceback's text (a pickled exception loses its traceback).
    An exception that does not survive pickling (a local class; an ``__init__`` whose
    arguments are not its ``args``) is sent as a WorkerError with its text instead."""
    import pickle
    import traceback

    remote = "".join(traceback.format_exception(exc))
    try:
        payload = pickle.dumps((False, exc, remote), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(payload)  # noqa: S301 - our own bytes; the parent will do the same
    except Exception:  # noqa: BLE001 - keep the text of whatever it was
        stand_in = WorkerError(f"a worker process failed: {type(exc).__name__}: {exc}")
        payload = pickle.dumps((False, stand_in, remote), protocol=pickle.HIGHEST_PROTOCOL)
    return payload


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # None, closed, broken
            stream.flush()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def describe_end(status: int | None) -> str:
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        import signal

        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def stop_child(pid: int) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)

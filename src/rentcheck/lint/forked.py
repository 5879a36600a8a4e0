"""Map a function over items in forked worker processes (Linux), without multiprocessing.

``multiprocessing.Pool`` costs 50-60 ms before its first task runs (importing threading,
queue, socket, subprocess, tempfile, ...; starting helper threads) and more to shut down: a
sixth of a cold lint run over a few hundred scripts. This needs ``os`` and ``pickle`` only.

- The parent writes every task's number, 4 bytes each, into one pipe before it forks. Each
  worker reads one number at a time from that pipe, so a worker that finishes early takes the
  next task, largest first, and the workers finish together. (Linux reads a whole 4-byte
  record under the pipe's lock; the numbers fill one page at most, which fits any pipe.)
- A worker inherits the function and the items (nothing is pickled on the way out), sends its
  results back as one pickle on a pipe of its own, and leaves with ``os._exit``: none of the
  parent's exit handlers run and none of its buffers are flushed twice.
- An exception in a worker is raised again in the parent; a worker that dies without an
  answer (killed, crashed) is an error that names the signal. When a process limit refuses
  a fork, the workers already started do all the tasks (or the parent, if none started).

The pickles are our own results from our own children: no untrusted data is unpickled.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

__all__ = ["WorkerError", "fork_map"]

_RECORD = 4  # bytes per task number
_MAX_TASKS = 4096 // _RECORD  # one page: what the smallest pipe holds without blocking


class WorkerError(RuntimeError):
    """A worker process ended without sending its results."""


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
    count = len(items)
    if count == 0:
        return []
    order = list(range(count)) if order is None else list(order)
    per_task = -(-count // _MAX_TASKS)  # ceiling: at most _MAX_TASKS tasks
    tasks = [order[i : i + per_task] for i in range(0, count, per_task)]
    task_read, task_write = os.pipe()
    try:
        os.write(task_write, b"".join(n.to_bytes(_RECORD, "little") for n in range(len(tasks))))
    finally:
        os.close(task_write)  # workers see the end of the tasks once they are all taken
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else each child would hold, and might write, a copy of the buffer
    children: list[tuple[int, int]] = []  # (pid, read end of its result pipe)
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
            os.close(fd)
            _stop(pid)


def _start(
    function: Callable[[T], R],
    items: Sequence[T],
    tasks: list[list[int]],
    task_fd: int,
    children: list[tuple[int, int]],
) -> bool:
    """Fork one worker and add it to ``children``; False when the system refuses the fork."""
    result_read, result_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(result_read)
        os.close(result_write)
        return False
    if pid == 0:  # the worker
        os.close(result_read)
        for _pid, inherited in children:
            os.close(inherited)
        _serve(function, items, tasks, task_fd, result_write)
    os.close(result_write)
    children.append((pid, result_read))
    return True


def _gather(children: list[tuple[int, int]], count: int) -> list[R]:
    """Each worker's answer, in turn; ``children`` keeps those not yet reaped."""
    import pickle

    results: list[R | None] = [None] * count
    while children:
        pid, fd = children[0]
        payload = _read_all(fd)
        os.close(fd)
        status = os.waitpid(pid, 0)[1]
        children.pop(0)
        if not payload:
            raise WorkerError(f"a lint worker process {_ended(status)} before it answered")
        ok, value, remote = pickle.loads(payload)  # noqa: S301 - our own child's answer
        if not ok:
            raise value from _RemoteTraceback(remote)  # the others are stopped by fork_map
        for index, result in value:
            results[index] = result
    return results  # type: ignore[return-value]  # every index was filled


def _serve(
    function: Callable[[T], R],
    items: Sequence[T],
    tasks: list[list[int]],
    task_fd: int,
    result_fd: int,
) -> NoReturn:
    """The worker's whole life: take tasks until there are none, answer, exit."""
    import pickle

    code = 0
    try:
        try:
            done = []
            while (task := _next_task(task_fd)) is not None:
                for index in tasks[task]:
                    done.append((index, function(items[index])))
            payload = pickle.dumps((True, done, ""), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            code = 1
            payload = _pickled_failure(exc)
        _write_all(result_fd, payload)
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


def _pickled_failure(exc: BaseException) -> bytes:
    """The exception and its traceback's text (a pickled exception loses its traceback)."""
    import pickle
    import traceback

    remote = "".join(traceback.format_exception(exc))
    try:
        return pickle.dumps((False, exc, remote), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an exception that does not pickle: keep its text
        stand_in = WorkerError(f"a lint worker failed: {type(exc).__name__}: {exc}")
        return pickle.dumps((False, stand_in, remote), protocol=pickle.HIGHEST_PROTOCOL)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        import signal

        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _stop(pid: int) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)

"""Small files checked in forked worker processes, a batch at a time, while the parent walks.

A small file costs about 20 µs of Python and system calls to open, read, hash, judge and
close, against about 5 µs for the parent to list it and match it with the roster: on one core
the read pass is the whole cost of a verify of many small files (``sha256sum -c`` does only
the read and the hash). Threads do not help, the per-file work holds the GIL; processes do.

- The workers are forked when the pool starts, before the verifier starts any thread (the
  large-file threads come after), so no lock is held in a child. They inherit the options and
  the code; what goes out is each batch's files (a few hundred ``(LocalFile, roster position,
  Expected)`` tuples, pickled), what comes back is each file's ``Outcome``.
- The parent never blocks on a write: every task pipe is non-blocking and the parent polls
  the result pipes while it has anything to send, so a worker blocked writing its results
  and a parent blocked writing a batch cannot wait for each other. At most ``IN_FLIGHT``
  batches wait per worker, so memory stays a few batches whatever the file count.
- A worker that raises sends the exception with its traceback, which the parent raises
  again; one that dies is a ``WorkerError`` saying how it ended. When the parent is done,
  fails or is interrupted, every worker is stopped and reaped.

The pickles are our own results from our own children: no untrusted data is unpickled (a
pulled file's bytes are only read, in the worker, by the same validators as without a pool).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import select
import signal
import struct
from collections.abc import Callable, Iterator
from typing import NoReturn

from rentcheck.forked import (
    WorkerError,
    describe_end,
    pickled_failure,
    stop_child,
    write_all,
)
from rentcheck.pull.filecheck import CheckOptions, Expected, FileVerdict, Outcome, check_one
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.walk import LocalFile

__all__ = ["BATCH", "SmallFilePool", "WorkerError"]

BATCH = 256  # files per message: tens of kilobytes each way
IN_FLIGHT = 2  # batches sent to one worker and not yet answered
_HEADER = struct.Struct("<I")
Job = tuple[LocalFile, "int | None", "Expected | None"]
Take = Callable[[Outcome, "int | None"], None]
#: an Outcome's fields, with its FileVerdict as a plain tuple
_Answer = tuple[tuple[object, ...], list[Issue], frozenset[str], object, int, bytes]


class _Worker:
    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid, self.tasks, self.results = pid, tasks, results
        self.out = bytearray()  # framed batches not yet written
        self.inbox = bytearray()  # result bytes not yet a whole frame
        self.sent: list[list[int | None]] = []  # roster positions of each unanswered batch


class SmallFilePool:
    """``check_one`` over batches of small files in ``workers`` processes; each outcome goes
    to ``take(outcome, at)`` in the parent, as it arrives."""

    def __init__(self, workers: int, opts: CheckOptions, take: Take) -> None:
        self._take = take
        self._progress = opts.progress
        quiet = dataclasses.replace(opts, progress=None, pool=None)  # progress: the parent's
        self._workers: list[_Worker] = []
        self._poller = select.poll()
        try:
            for _ in range(workers):
                worker = _fork(quiet, self._workers)
                if worker is None:
                    break  # a process limit: fewer workers (none: the caller checks inline)
                self._workers.append(worker)
                self._poller.register(worker.results, select.POLLIN)
        except BaseException:
            self.close(abandon=True)
            raise

    def __len__(self) -> int:
        return len(self._workers)

    def put(self, batch: list[Job]) -> None:
        """Send ``batch`` to the least busy worker (waiting for answers while all are full)."""
        while True:
            worker = min(self._workers, key=lambda w: len(w.sent))
            if len(worker.sent) < IN_FLIGHT:
                break
            self._pump(block=True)
        # as plain tuples: a named tuple pickles through a Python call each
        plain = [(tuple(lf), e if e is None else tuple(e)) for lf, _, e in batch]
        payload = pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)
        worker.out += _HEADER.pack(len(payload)) + payload
        worker.sent.append([at for _, at, _ in batch])
        self._pump(block=False)

    def close(self, *, abandon: bool = False) -> None:
        """Wait for every answer (unless ``abandon``), then stop and reap the workers."""
        try:
            while not abandon and any(w.sent for w in self._workers):
                self._pump(block=True)
        finally:
            for worker in self._workers:
                for fd in (worker.tasks, worker.results):
                    with contextlib.suppress(OSError):
                        os.close(fd)
                stop_child(worker.pid)
            self._workers = []

    def _pump(self, *, block: bool) -> None:
        """Write what can be written, read what has arrived; wait only when ``block``."""
        for worker in self._workers:
            if worker.out:
                self._write(worker)
        writing = [w for w in self._workers if w.out]
        for fd, _event in self._poll(writing, block):
            for one in self._workers:
                if fd == one.tasks:
                    self._write(one)
                elif fd == one.results:
                    self._read(one)

    def _poll(self, writing: list[_Worker], block: bool) -> list[tuple[int, int]]:
        for worker in writing:
            self._poller.register(worker.tasks, select.POLLOUT)
        try:
            return self._poller.poll(-1 if block else 0)
        finally:
            for worker in writing:
                self._poller.unregister(worker.tasks)

    def _write(self, worker: _Worker) -> None:
        try:
            written = os.write(worker.tasks, worker.out)
        except BlockingIOError:
            return
        except BrokenPipeError:
            self._died(worker)
        del worker.out[:written]

    def _read(self, worker: _Worker) -> None:
        chunk = os.read(worker.results, 1 << 20)
        if not chunk:
            self._died(worker)
        worker.inbox += chunk
        for message in _frames(worker.inbox):
            ok, value, remote = pickle.loads(message)  # noqa: S301 - our own child's answer
            if not ok:
                raise value from _Remote(remote)
            positions = worker.sent.pop(0)
            for (verdict, issues, names, index, read, digest), at in zip(
                value, positions, strict=True
            ):
                outcome = Outcome(FileVerdict(*verdict), issues, names, index, read, digest)
                if self._progress is not None:
                    self._progress(read, 1)
                self._take(outcome, at)

    def _died(self, worker: _Worker) -> NoReturn:
        try:
            status: int | None = os.waitpid(worker.pid, 0)[1]
        except ChildProcessError:
            status = None
        raise WorkerError(f"a verify worker process {describe_end(status)} before it answered")


class _Remote(Exception):
    """A worker's traceback, shown as the cause of the exception raised again here."""


def _frames(inbox: bytearray) -> Iterator[bytes]:
    """Whole frames at the start of ``inbox``, removed from it as they are taken."""
    while len(inbox) >= _HEADER.size:
        (size,) = _HEADER.unpack_from(inbox)
        if len(inbox) < _HEADER.size + size:
            return
        message = bytes(inbox[_HEADER.size : _HEADER.size + size])
        del inbox[: _HEADER.size + size]
        yield message


def _fork(opts: CheckOptions, started: list[_Worker]) -> _Worker | None:
    """One worker (None when the system refuses the fork)."""
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        try:
            pid = os.fork()
        except OSError:
            for fd in (task_read, task_write, result_read, result_write):
                os.close(fd)
            return None
        if pid == 0:  # the worker: from here on, only os._exit leaves
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                for fd in (task_write, result_read):
                    os.close(fd)
                for other in started:
                    os.close(other.tasks)
                    os.close(other.results)
                _serve(opts, task_read, result_write)
            finally:
                os._exit(1)
        os.close(task_read)
        os.close(result_write)
        os.set_blocking(task_write, False)
        return _Worker(pid, task_write, result_read)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _serve(opts: CheckOptions, tasks: int, results: int) -> NoReturn:
    """Check each batch that comes and answer it, until the parent closes the task pipe."""
    code = 0
    try:
        while (message := _read_frame(tasks)) is not None:
            try:
                batch = pickle.loads(message)  # noqa: S301 - our parent's batch
                answer = [_checked(LocalFile(*lf), e, opts) for lf, e in batch]
                payload = pickle.dumps((True, answer, ""), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
                code, payload = 1, pickled_failure(exc)
            write_all(results, _HEADER.pack(len(payload)) + payload)
            if code:
                break
    except BaseException:  # noqa: BLE001 - interrupted or the parent is gone: just end
        code = 1
    finally:
        os._exit(code)


def _checked(lf: LocalFile, expected: tuple[int, bytes] | None, opts: CheckOptions) -> _Answer:
    """``check_one``'s outcome as plain values (they pickle in C, the classes do not)."""
    out = check_one(lf, None if expected is None else Expected(*expected), opts)
    return tuple(out.verdict), out.issues, out.tensor_names, out.index, out.read, out.digest


def _read_frame(fd: int) -> bytes | None:
    head = _read_exactly(fd, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    return _read_exactly(fd, size)


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)

"""Small files checked in worker processes, a batch at a time, while the parent walks.

A small file costs about 20 µs of Python and system calls to open, read, hash, judge and
close, against about 5 µs for the parent to list it and match it with the roster: on one core
the read pass is the whole cost of a verify of many small files (``sha256sum -c`` does only
the read and the hash). Threads do not help, the per-file work holds the GIL; processes do.

The workers are a ``concurrent.futures.ProcessPoolExecutor`` (fork context): a verify of many
small files runs for seconds to minutes, so the pool's start-up (35-95 ms to import, start
and stop, measured in 2026-12: see ``forked``) does not matter here, unlike lint's.

- The workers are forked when the pool starts, before the verifier starts any thread (the
  large-file threads come after), so no lock is held in a child. They inherit the options and
  the code; what goes out is each batch's files (a few hundred ``(LocalFile, Expected)``
  tuples, pickled), what comes back is each file's ``Outcome`` as plain values.
- At most ``IN_FLIGHT`` batches per worker are unanswered, so memory stays a few batches
  whatever the file count. Answers are taken in the order the batches were sent, in the
  parent's thread: ``take`` is never called from the executor's threads.
- A worker that raises has its exception raised again in the parent with the worker's
  traceback as the cause; one that dies is a ``WorkerError`` saying how it ended. When the
  parent is done, fails or is interrupted, the pool is shut down and its workers reaped.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from rentcheck.pull.filecheck import CheckOptions, Expected, FileVerdict, Outcome, check_one
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.walk import LocalFile

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

__all__ = ["BATCH", "SmallFilePool", "WorkerError"]

BATCH = 256  # files per message: tens of kilobytes each way
IN_FLIGHT = 2  # batches per worker sent and not yet answered
Job = tuple[LocalFile, "int | None", "Expected | None"]
Take = Callable[[Outcome, "int | None"], None]
#: an Outcome's fields, with its FileVerdict as a plain tuple
_Answer = tuple[tuple[Any, ...], list[Issue], frozenset[str], object, int, bytes]
#: a batch as sent: each file's LocalFile and Expected as plain tuples
_Plain = list[tuple[tuple[Any, ...], "tuple[Any, ...] | None"]]

_opts: CheckOptions | None = None  # in a worker: the options it checks with


class WorkerError(RuntimeError):
    """A verify worker process ended without an answer."""


class SmallFilePool:
    """``check_one`` over batches of small files in ``workers`` processes; each outcome goes
    to ``take(outcome, at)`` in the parent's thread."""

    def __init__(self, workers: int, opts: CheckOptions, take: Take) -> None:
        self._take = take
        self._progress = opts.progress
        quiet = dataclasses.replace(opts, progress=None, pool=None)  # progress: the parent's
        self._limit = IN_FLIGHT * workers
        self._sent: deque[tuple[Future[list[_Answer]], list[int | None]]] = deque()
        self._executor: ProcessPoolExecutor | None = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_adopt,
            initargs=(quiet,),
        )
        self._processes: list[BaseProcess] = []
        try:
            # The fork context starts every worker at the first task: now, before any thread.
            self._executor.submit(int).result()
        except OSError:  # a process limit refused a fork: the caller checks inline
            self.close(abandon=True)
            return
        except BaseException:
            self.close(abandon=True)
            raise
        # BrokenProcessPool does not say how the worker ended (3.11); its process does.
        self._processes = list(getattr(self._executor, "_processes", {}).values())

    def __len__(self) -> int:
        return len(self._processes)

    def put(self, batch: list[Job]) -> None:
        """Send ``batch`` to the workers (taking answers first while too many wait)."""
        while len(self._sent) >= self._limit:
            self._answer(*self._sent.popleft())
        # as plain tuples: a named tuple pickles through a Python call each
        plain = [(tuple(lf), e if e is None else tuple(e)) for lf, _, e in batch]
        self._submit(plain, [at for _, at, _ in batch])
        while self._sent and self._sent[0][0].done():
            self._answer(*self._sent.popleft())

    def close(self, *, abandon: bool = False) -> None:
        """Take every answer (unless ``abandon``), then shut the workers down and reap them."""
        try:
            while not abandon and self._sent:
                self._answer(*self._sent.popleft())
        finally:
            self._sent.clear()
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None

    def _submit(self, plain: _Plain, positions: list[int | None]) -> None:
        if self._executor is None:
            raise RuntimeError("a batch put after the pool was closed")
        self._sent.append((self._executor.submit(_check_batch, plain), positions))

    def _answer(self, future: Future[list[_Answer]], positions: list[int | None]) -> None:
        try:
            answers = future.result()
        except BrokenProcessPool as exc:
            raise WorkerError(
                f"a verify worker process {self._how_ended()} before it answered"
            ) from exc
        for (verdict, issues, names, index, read, digest), at in zip(
            answers, positions, strict=True
        ):
            outcome = Outcome(FileVerdict(*verdict), issues, names, index, read, digest)
            if self._progress is not None:
                self._progress(read, 1)
            self._take(outcome, at)

    def _how_ended(self) -> str:
        """How the first worker that was not stopped by the pool itself ended."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)  # reaps them all
            self._executor = None
        for process in self._processes:
            code = process.exitcode
            if code is None or code == -signal.SIGTERM:  # alive, or stopped by the pool
                continue
            if code < 0:
                try:
                    return f"was killed by {signal.Signals(-code).name}"
                except ValueError:
                    return f"was killed by signal {-code}"
            return f"exited with status {code}"
        return "ended"


def _adopt(opts: CheckOptions) -> None:
    """A worker's initializer: the options it checks with (inherited through the fork)."""
    global _opts  # noqa: PLW0603 - one per worker process, set once
    _opts = opts


def _check_batch(batch: _Plain) -> list[_Answer]:
    if _opts is None:
        raise RuntimeError("a verify worker started without its options")
    return [_checked(LocalFile(*lf), e, _opts) for lf, e in batch]


def _checked(lf: LocalFile, expected: tuple[int, bytes] | None, opts: CheckOptions) -> _Answer:
    """``check_one``'s outcome as plain values (they pickle in C, the classes do not)."""
    out = check_one(lf, None if expected is None else Expected(*expected), opts)
    return tuple(out.verdict), out.issues, out.tensor_names, out.index, out.read, out.digest

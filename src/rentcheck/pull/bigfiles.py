"""The large files of a verification, checked on worker threads while the walk goes on.

Small files are read in the walking thread (handing a 4 KiB file to a thread cost more than
reading it: a future, two context switches and the GIL ping-pong per file). A larger file is
queued here and taken by one of ``workers`` threads, the largest waiting file first (hashlib,
zlib and numpy release the GIL). At most ``WINDOW`` files wait; the walk pauses while the
queue is full, so memory stays bounded whatever the file count.

A file is read inline (one thread) when there are many large files to keep every worker busy,
and with its hash on a helper thread (see readpipe) when there are few: the workers wait up to
``START_WAIT`` seconds for the walk to finish, so that the count is known before they choose.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import time
from collections.abc import Callable

from rentcheck.pull.filecheck import CheckOptions, Expected, Outcome, check_one
from rentcheck.pull.walk import LocalFile

__all__ = ["BigFiles"]

WINDOW = 1024
START_WAIT = 0.05

_Item = tuple[int, int, LocalFile, "int | None", "Expected | None"]


class BigFiles:
    """``put`` files from the walking thread; ``close`` waits for all (re-raising the first
    error of a worker). ``take(outcome, at)`` is called from the workers."""

    def __init__(
        self, workers: int, opts: CheckOptions, take: Callable[[Outcome, int | None], None]
    ) -> None:
        self._workers = workers
        self._inline = dataclasses.replace(opts, pipeline=False)
        self._piped = dataclasses.replace(opts, pipeline=True)
        self._take = take
        self._heap: list[_Item] = []
        self._cond = threading.Condition()
        self._count = 0
        self._walked = False
        self._go = False
        self._first = 0.0
        self._error: BaseException | None = None
        self._threads: list[threading.Thread] = []

    def put(self, lf: LocalFile, at: int | None, expected: Expected | None) -> None:
        with self._cond:
            while len(self._heap) >= WINDOW and self._error is None:
                self._cond.wait()
            if self._error is not None:
                return  # close() raises it
            heapq.heappush(self._heap, (-lf.size, self._count, lf, at, expected))
            self._count += 1
            if not self._threads:
                self._first = time.monotonic()
                self._threads = [
                    threading.Thread(target=self._run, name=f"rentcheck-verify-{k}", daemon=True)
                    for k in range(self._workers)
                ]
                for thread in self._threads:
                    thread.start()
            self._cond.notify()

    def close(self, *, abandon: bool = False) -> None:
        """The walk is over: wait for the queued files (or drop them, with ``abandon``)."""
        with self._cond:
            self._walked = True
            if abandon:
                self._heap.clear()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()
        if self._error is not None and not abandon:
            raise self._error

    def _next(self) -> tuple[_Item, CheckOptions] | None:
        with self._cond:
            while True:
                if self._error is not None or (self._walked and not self._heap):
                    return None
                if self._heap and (
                    self._go or self._walked or len(self._heap) >= 2 * self._workers
                ):
                    self._go = True
                    break
                left = self._first + START_WAIT - time.monotonic()
                if self._heap and left <= 0:
                    self._go = True  # a long walk: start now, one thread per file
                    continue
                self._cond.wait(left if self._heap else None)
            item = heapq.heappop(self._heap)
            self._cond.notify_all()  # room in the window
            few = self._walked and self._count < 2 * self._workers
            return item, self._piped if few else self._inline

    def _run(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            (_, _, lf, at, expected), opts = job
            try:
                self._take(check_one(lf, expected, opts), at)
            except BaseException as exc:  # noqa: BLE001 - handed to the walking thread
                with self._cond:
                    if self._error is None:
                        self._error = exc
                    self._cond.notify_all()
                return

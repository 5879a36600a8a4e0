"""Buffers and the hashing stage of the single read pass.

Two ways to read a file, chosen per run:

* inline (many files, every core busy with one file each): small reads into one buffer of
  ``INLINE_CHUNK`` bytes, each hashed, CRC'd and scanned at once. The buffer never leaves the
  core's L2 cache, so the kernel's copy into it and every pass over it are cache hits: on the
  reference machine this took the system time of a 2 GiB run from 1.1 s to 0.25 s, and fewer
  CPU seconds in all than 8 MiB reads.
* pipelined (one or a few large files, cores to spare): 8 MiB reads into a small ring of
  buffers; SHA-256 runs on a helper thread, fed the chunks in order, so reading and validating
  chunk k+1 overlaps hashing chunk k (hashlib, zlib and numpy release the GIL).

Buffers come from a pool shared by the workers of one verification, so they are allocated
(and their pages faulted in) once per run, not once per file; memory stays at a few chunks per
worker whatever the file sizes.
"""

from __future__ import annotations

import hashlib
import queue
import threading

__all__ = ["INLINE_CHUNK", "RING", "BufferPool", "Hasher"]

RING = 3  # buffers per pipelined file: one being read/validated, one being hashed, one spare
#: With the source pages it streams past, inside a 1 MiB L2. The validators cost about 20 µs
#: of Python per chunk whatever its size: at 128 KiB that was 0.4 s of a 2 GiB verify (1.29 s
#: against 1.05 s hashing alone, verify_throughput's corpus, 2 MiB L2); at 512 KiB, 0.1 s.
INLINE_CHUNK = 512 * 1024


class BufferPool:
    """Reusable bytearrays of a few sizes, handed out and taken back; grows on demand."""

    def __init__(self) -> None:
        self._free: dict[int, queue.SimpleQueue[bytearray]] = {}
        self._lock = threading.Lock()

    def _queue(self, size: int) -> queue.SimpleQueue[bytearray]:
        with self._lock:
            return self._free.setdefault(size, queue.SimpleQueue())

    def take(self, n: int, size: int) -> list[bytearray]:
        free = self._queue(size)
        out = []
        for _ in range(n):
            try:
                out.append(free.get_nowait())
            except queue.Empty:
                out.append(bytearray(size))
        return out

    def give(self, bufs: list[bytearray]) -> None:
        for buf in bufs:
            self._queue(len(buf)).put(buf)


class Hasher:
    """SHA-256 of the chunks ``submit``-ted, in order; ``free`` yields the buffers to fill.

    With ``threaded`` the digest is computed on a helper thread; otherwise inline (files of a
    few chunks, where a thread costs more than it saves). ``close`` waits for the last chunk and
    returns the buffers.
    """

    def __init__(self, bufs: list[bytearray], *, threaded: bool) -> None:
        self.sha = hashlib.sha256()
        self._bufs = bufs
        self.free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for buf in bufs:
            self.free.put(buf)
        self._todo: queue.SimpleQueue[tuple[bytearray, int] | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._todo = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._run, name="rentcheck-sha256", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        todo = self._todo
        while todo is not None:
            item = todo.get()
            if item is None:
                return
            self._hash(*item)

    def _hash(self, buf: bytearray, n: int) -> None:
        with memoryview(buf) as view:
            self.sha.update(view[:n])
        self.free.put(buf)

    def submit(self, buf: bytearray, n: int) -> None:
        if self._todo is None:
            self._hash(buf, n)
        else:
            self._todo.put((buf, n))

    def close(self) -> list[bytearray]:
        """Wait until every submitted chunk is hashed; the buffers, for reuse."""
        if self._todo is not None and self._thread is not None:
            self._todo.put(None)
            self._thread.join()
        return self._bufs

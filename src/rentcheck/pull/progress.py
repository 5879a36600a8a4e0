"""One status line on a terminal while a long verification runs: files and bytes done / total,
rates, ETA.

Only used when stderr is a terminal (the CLI decides); colour follows ``--color``/``NO_COLOR``.
Safe to call from the verifier's worker threads.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["TerminalProgress", "human_bytes"]

_DIM, _RESET = "\x1b[2m", "\x1b[0m"
#: what opening, checking and closing one file costs, in bytes read: the ETA weighs files by it,
#: so a tree of many small files does not show a far too hopeful time
FILE_COST_BYTES = 64 * 1024


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover - the loop always returns


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class TerminalProgress:
    """Implements ``rentcheck.pull.verify.Progress``; redraws at most every ``interval`` s."""

    def __init__(self, stream: TextIO, *, color: bool = False, interval: float = 0.25) -> None:
        self._stream = stream
        self._color = color
        self._interval = interval
        self._lock = threading.Lock()
        self._total = 0
        self._files = 0
        self._done = 0
        self._files_done = 0
        self._start = time.monotonic()
        self._shown = 0.0

    def start(self, total_bytes: int, files: int) -> None:
        with self._lock:
            self._total, self._files = total_bytes, files
            self._start = time.monotonic()
            self._draw(self._start)

    def advance(self, nbytes: int, files: int = 0) -> None:
        with self._lock:
            self._done += nbytes
            self._files_done += files
            now = time.monotonic()
            if now - self._shown >= self._interval:
                self._draw(now)

    def _line(self, now: float) -> tuple[str, str]:
        elapsed = max(now - self._start, 1e-6)
        rate = self._done / elapsed
        head = (
            f"verify: {self._files_done:,}/{self._files:,} files, "
            f"{human_bytes(self._done)} / {human_bytes(self._total)}"
        )
        done = self._done + self._files_done * FILE_COST_BYTES
        left = self._total + self._files * FILE_COST_BYTES - done
        eta = _duration(left * elapsed / done) if done > 0 else "--:--"
        files_rate = self._files_done / elapsed
        return head, f"{files_rate:,.0f} files/s, {human_bytes(rate)}/s, ETA {eta}"

    def _draw(self, now: float) -> None:
        head, tail = self._line(now)
        if self._color:
            tail = f"{_DIM}{tail}{_RESET}"
        self._stream.write(f"\r\x1b[K{head}  {tail}")
        self._stream.flush()
        self._shown = now

    def finish(self) -> None:
        """Replace the status line with a one-line summary."""
        with self._lock:
            elapsed = max(time.monotonic() - self._start, 1e-6)
            summary = (
                f"verify: read {human_bytes(self._done)} of {self._files_done:,} files in "
                f"{elapsed:.1f} s ({human_bytes(self._done / elapsed)}/s)"
            )
            self._stream.write(f"\r\x1b[K{summary}\n")
            self._stream.flush()

"""Which bytes of each torch storage some tensor's view covers: the bytes the NaN/Inf scan
judges. ``torch.save(t[:2])`` writes ``t``'s whole storage; a NaN in its tail is no value of
the loaded tensor, so it is not refused.

A storage is judged whole unless every persistent id that names it is the storage argument of
a rebuild whose view (offset, size, stride) the machine read as integers, and no copy of it
(a memo GET, a DUP) was taken: a bare storage in the loaded object is a value too. A view
covers exactly its elements (``m[:, :3]`` skips every fourth), as runs of contiguous ones;
past a budget of runs, from its first element to its last (holes too): never less."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

__all__ = ["StorageViews"]

#: Byte ranges remembered over the whole pickle: a view is one run when contiguous, one per
#: row when a slice of columns; past the budget, a view is one range from first to last byte.
MAX_RUNS = 1 << 16
#: Ranges remembered per storage; past it the storage is scanned whole.
MAX_RANGES_PER_STORAGE = 1 << 14


class StorageViews:
    """Collects, while a pickle is walked, the byte ranges views cover and what breaks them."""

    def __init__(self) -> None:
        self._named: Counter[str] = Counter()  # persistent ids naming each storage
        self._viewed: Counter[str] = Counter()  # of those, consumed by a readable view
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        self._whole: set[str] = set()
        self._runs_left = MAX_RUNS

    def named(self, key: str) -> None:
        """A persistent id names the storage ``key``."""
        self._named[key] += 1

    def viewed(
        self, key: str, offset: int, sizes: Sequence[int], strides: Sequence[int], element: int
    ) -> None:
        """A tensor views storage ``key`` (elements of ``element`` bytes; non-negative
        offset and strides, positive sizes, checked by the caller)."""
        self._viewed[key] += 1
        ranges = self._ranges.setdefault(key, [])
        runs = _runs(offset, sizes, strides, self._runs_left)
        self._runs_left -= len(runs)
        if len(ranges) + len(runs) > MAX_RANGES_PER_STORAGE:
            self._whole.add(key)
            return
        ranges += [(start * element, (start + length) * element) for start, length in runs]

    def whole(self, keys: frozenset[str] | set[str]) -> None:
        """These storages are reachable other than through a view (copied, or read whole)."""
        self._whole |= keys

    def spans(self, key: str, align: int) -> tuple[tuple[int, int], ...] | None:
        """The merged byte ranges of storage ``key`` some view covers, widened to whole
        ``align``-byte elements; None when the storage must be scanned whole."""
        if key in self._whole or self._named[key] != self._viewed[key] or not self._named[key]:
            return None
        merged: list[tuple[int, int]] = []
        for first, last in sorted(self._ranges.get(key, ())):
            start, end = first - first % align, -(-last // align) * align
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return tuple(merged)


def _runs(
    offset: int, sizes: Sequence[int], strides: Sequence[int], budget: int
) -> list[tuple[int, int]]:
    """The (first element, length) runs of contiguous elements a view covers: the innermost
    dimensions that are contiguous make one run, every index of the others starts one. More
    runs than ``budget``: one run from the first element to the last."""
    if any(size == 0 for size in sizes):
        return []
    dims = sorted((stride, size) for size, stride in zip(sizes, strides, strict=True) if size > 1)
    length, inner = 1, 0
    while inner < len(dims) and dims[inner][0] == length:
        length *= dims[inner][1]
        inner += 1
    outer = dims[inner:]
    if math.prod(size for _, size in outer) > budget:
        last = offset + sum((size - 1) * stride for stride, size in dims)
        return [(offset, last + 1 - offset)]
    starts = [offset]
    for stride, size in outer:
        starts = [start + i * stride for start in starts for i in range(size)]
    return [(start, length) for start in starts]

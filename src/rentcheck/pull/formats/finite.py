"""Exact NaN/Inf counting on raw tensor bytes (big-endian too: ``*BE``), fed in any chunks.

A float is non-finite exactly when its exponent bits are all ones, i.e. when its bits without
the sign are at least the +Inf pattern. So the test is integer arithmetic on the raw bytes: a
signed and an unsigned max per chunk when everything is finite (about 20 GB/s on cached data
for fp32/bf16/fp16, the ``torch.aminmax`` class), and an exact mask-and-count only for chunks
that hold a NaN/Inf. It never converts bf16 or float8 to anything. numpy is optional; without
it the scanner reports itself as skipped instead of guessing.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rentcheck.pull.formats.base import Issue
from rentcheck.pull.rules import FINITE_SCAN_SKIPPED, NON_FINITE_TENSOR

__all__ = [
    "FLOAT_SPECS",
    "FiniteScanner",
    "NonFinite",
    "count_nonfinite",
    "nonfinite_issues",
    "numpy_or_none",
    "skipped_issue",
]


@dataclass(frozen=True)
class _Spec:
    itemsize: int
    mask: int  # bits that decide "non-finite"
    value: int  # (x & mask) == value  <=>  NaN or Inf
    absmask: int  # everything but the sign
    inf: int | None  # (x & absmask) == inf  <=>  Inf; None when the format has no Inf
    big: bool = False  # big-endian elements (an .npy written as '>f4')


FLOAT_SPECS: dict[str, _Spec] = {
    "F16": _Spec(2, 0x7C00, 0x7C00, 0x7FFF, 0x7C00),
    "BF16": _Spec(2, 0x7F80, 0x7F80, 0x7FFF, 0x7F80),
    "F32": _Spec(4, 0x7F800000, 0x7F800000, 0x7FFFFFFF, 0x7F800000),
    "F64": _Spec(8, 0x7FF0000000000000, 0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000),
    "C64": _Spec(4, 0x7F800000, 0x7F800000, 0x7FFFFFFF, 0x7F800000),
    "C128": _Spec(
        8, 0x7FF0000000000000, 0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000
    ),
    "F16BE": _Spec(2, 0x7C00, 0x7C00, 0x7FFF, 0x7C00, big=True),
    "F32BE": _Spec(4, 0x7F800000, 0x7F800000, 0x7FFFFFFF, 0x7F800000, big=True),
    "F64BE": _Spec(
        8, 0x7FF0000000000000, 0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, True
    ),
    "C64BE": _Spec(4, 0x7F800000, 0x7F800000, 0x7FFFFFFF, 0x7F800000, big=True),
    "C128BE": _Spec(
        8, 0x7FF0000000000000, 0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, True
    ),
    "F8_E5M2": _Spec(1, 0x7C, 0x7C, 0x7F, 0x7C),
    "F8_E4M3": _Spec(1, 0x7F, 0x7F, 0x7F, None),
    "F8_E4M3FNUZ": _Spec(1, 0xFF, 0x80, 0xFF, None),
    "F8_E5M2FNUZ": _Spec(1, 0xFF, 0x80, 0xFF, None),
    "F8_E8M0": _Spec(1, 0xFF, 0xFF, 0xFF, None),
}

_UINT = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}
_INT = {2: "<i2", 4: "<i4", 8: "<i8"}


@functools.lru_cache(maxsize=1)
def numpy_or_none() -> ModuleType | None:
    """numpy if it can be imported, else None (imported once, lazily)."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def count_nonfinite(np: Any, dtype: str, data: memoryview | bytes) -> tuple[int, int]:
    """(NaN count, Inf count) in ``data``, which holds whole elements of ``dtype``."""
    spec = FLOAT_SPECS[dtype]
    if not len(data):
        return 0, 0
    order = ">" if spec.big else "<"
    a = np.frombuffer(data, dtype=order + _UINT[spec.itemsize][1:])
    if spec.itemsize > 1:
        # Sign-magnitude IEEE formats: a positive NaN/Inf is the largest signed value, a
        # negative one the largest unsigned value. Two allocation-free reductions (about
        # 20 GB/s on data already in cache) decide the common, all-finite case exactly.
        signed = np.frombuffer(data, dtype=order + _INT[spec.itemsize][1:])
        sign = 1 << (8 * spec.itemsize - 1)
        if int(signed.max()) < spec.value and int(a.max()) < sign | spec.value:
            return 0, 0
    elif spec.value != 0x80 and int((a & spec.absmask).max()) < spec.value:
        return 0, 0  # one-byte formats: |x| below the first NaN/Inf pattern everywhere
    if spec.mask == 0xFF and spec.itemsize == 1:
        bad = int(np.count_nonzero(a == spec.value))
    else:
        bad = int(np.count_nonzero((a & spec.mask) == spec.value))
    if not bad or spec.inf is None:
        return bad, 0
    inf = int(np.count_nonzero((a & spec.absmask) == spec.inf))
    return bad - inf, inf


@dataclass(frozen=True)
class NonFinite:
    name: str
    dtype: str
    nan: int
    inf: int


class _Span:
    __slots__ = ("carry", "dtype", "end", "inf", "name", "nan", "start")

    def __init__(self, start: int, end: int, name: str, dtype: str) -> None:
        self.start, self.end, self.name, self.dtype = start, end, name, dtype
        self.carry = b""
        self.nan = 0
        self.inf = 0


class FiniteScanner:
    """Counts NaN/Inf in byte spans of a stream; spans are in stream coordinates.

    Spans may be added while streaming (legacy torch files reveal them late) as long as each
    starts at or after the end of the previous one and after the bytes already fed.
    """

    def __init__(self) -> None:
        self._np: ModuleType | None = None  # imported at the first float bytes, not before
        self._spans: list[_Span] = []
        self._next = 0  # index of the first span not yet fully consumed
        self._pos = 0

    @property
    def available(self) -> bool:
        return numpy_or_none() is not None

    def add_span(self, start: int, end: int, name: str, dtype: str) -> bool:
        """Scan ``[start, end)`` as ``dtype``; False (and ignored) if it cannot be scanned."""
        if dtype not in FLOAT_SPECS or end <= start or start < self._pos:
            return False
        if self._spans and start < self._spans[-1].end:
            return False
        self._spans.append(_Span(start, end, name, dtype))
        return True

    def feed(self, chunk: memoryview) -> None:
        lo, hi = self._pos, self._pos + len(chunk)
        self._pos = hi
        spans = self._spans
        if self._next >= len(spans) or spans[self._next].start >= hi:
            return
        if self._np is None:
            self._np = numpy_or_none()
            if self._np is None:
                return
        while self._next < len(spans):
            span = spans[self._next]
            if span.start >= hi:
                break
            a, b = max(span.start, lo), min(span.end, hi)
            if a < b:
                self._consume(span, chunk[a - lo : b - lo])
            if span.end <= hi:
                self._next += 1
            else:
                break

    def _consume(self, span: _Span, piece: memoryview) -> None:
        size = FLOAT_SPECS[span.dtype].itemsize
        if span.carry:
            need = size - len(span.carry)
            head = span.carry + bytes(piece[:need])
            if len(head) < size:
                span.carry = head
                return
            self._count(span, head)
            piece = piece[need:]
        whole = len(piece) - len(piece) % size
        self._count(span, piece[:whole])
        span.carry = bytes(piece[whole:])

    def _count(self, span: _Span, data: memoryview | bytes) -> None:
        nan, inf = count_nonfinite(self._np, span.dtype, data)
        span.nan += nan
        span.inf += inf

    def results(self) -> list[NonFinite]:
        """Every span with at least one NaN or Inf, in stream order; the spans of one tensor
        (the parts of a storage its views cover) count as one."""
        found: list[NonFinite] = []
        for s in self._spans:
            if not (s.nan or s.inf):
                continue
            if found and (found[-1].name, found[-1].dtype) == (s.name, s.dtype):
                last = found.pop()
                found.append(NonFinite(s.name, s.dtype, last.nan + s.nan, last.inf + s.inf))
            else:
                found.append(NonFinite(s.name, s.dtype, s.nan, s.inf))
        return found


def nonfinite_issues(found: list[NonFinite], *, limit: int = 20) -> list[Issue]:
    """One RC516 issue per non-finite tensor (the first ``limit``), then one summary issue."""
    issues = [
        Issue(
            NON_FINITE_TENSOR,
            f"tensor '{nf.name}' ({nf.dtype}) has {nf.nan} NaN and {nf.inf} Inf values",
            {"tensor": nf.name, "dtype": nf.dtype, "nan": nf.nan, "inf": nf.inf},
        )
        for nf in found[:limit]
    ]
    if len(found) > limit:
        rest = found[limit:]
        issues.append(
            Issue(
                NON_FINITE_TENSOR,
                f"{len(rest)} more tensors have NaN/Inf values "
                f"({sum(n.nan for n in rest)} NaN, {sum(n.inf for n in rest)} Inf)",
                {"tensors": [n.name for n in rest[:1000]]},
            )
        )
    return issues


def skipped_issue(what: str, reason: str) -> Issue:
    return Issue(FINITE_SCAN_SKIPPED, f"NaN/Inf scan skipped for {what}: {reason}")

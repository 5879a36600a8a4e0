"""numpy ``.npy`` files: the header, the data length, NaN/Inf, and object arrays as pickles.

An ``.npy`` is a magic string, a version, a header length and a Python-literal header dict
(``descr``, ``fortran_order``, ``shape``), then the raw array. An object array (``descr``
``|O``) holds a pickle instead, which ``numpy.load(allow_pickle=True)`` reads with
``pickle.load``: it is scanned like any bare pickle (nothing outside the allow-list may be
reachable). The header is parsed with ``ast.literal_eval``, never ``eval``.
"""

from __future__ import annotations

import ast
import math

from rentcheck.pull.formats.base import Issue, TensorInfo
from rentcheck.pull.formats.finite import FiniteScanner, nonfinite_issues, skipped_issue
from rentcheck.pull.formats.legacy import PickleStreamValidator
from rentcheck.pull.rules import PICKLE_MALFORMED

__all__ = ["NPY_MAGIC", "NpyValidator"]

NPY_MAGIC = b"\x93NUMPY"
_MAX_HEADER = 1 << 16
_FLOATS = {"<f2": "F16", "<f4": "F32", "<f8": "F64", "<c8": "C64", "<c16": "C128"}


class NpyValidator:
    def __init__(self, file_size: int, *, extra_allowed: tuple[str, ...] = ()) -> None:
        self._size = file_size
        self._allowed = extra_allowed
        self._head = bytearray()
        self._start = -1  # where the array (or pickle) begins; -1 until the header is read
        self._issues: list[Issue] = []
        self._pickle: PickleStreamValidator | None = None
        self._scanner = FiniteScanner()
        self._pos = 0
        self._floats = False
        self.tensors: tuple[TensorInfo, ...] = ()

    def _bad(self, message: str) -> None:
        self._issues.append(Issue(PICKLE_MALFORMED, f".npy: {message}"))
        self._start = self._size + 1  # nothing more to read

    def _header(self) -> None:
        head = bytes(self._head)
        if len(head) < 10:
            return
        major = head[6]
        width = 2 if major == 1 else 4
        if major not in (1, 2, 3) or len(head) < 8 + width:
            self._bad(f"unknown format version {major}")
            return
        n = int.from_bytes(head[8 : 8 + width], "little")
        if n > _MAX_HEADER:
            self._bad(f"header of {n} bytes")
            return
        if len(head) < 8 + width + n:
            return
        start = 8 + width + n
        text = head[8 + width : start].decode("latin-1")
        try:
            meta = ast.literal_eval(text)
            descr, shape = meta["descr"], tuple(meta["shape"])
        except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
            self._bad("header is not the dict numpy writes")
            return
        self._start = start
        if not isinstance(descr, str) or not all(isinstance(d, int) and d >= 0 for d in shape):
            self._bad(f"header describes {descr!r} of shape {shape!r}")
            return
        if "O" in descr:
            self._pickle = PickleStreamValidator(
                self._size - start, legacy=False, extra_allowed=self._allowed
            )
            return
        itemsize = _itemsize(descr)
        want = start + math.prod(shape) * itemsize if itemsize else self._size
        if want != self._size:
            self._bad(f"{descr} {list(shape)} needs {want} bytes, the file has {self._size}")
            return
        self.tensors = (TensorInfo("array", descr, self._size - start),)
        dtype = _FLOATS.get(descr.replace("=", "<"))
        if dtype is not None:
            self._floats = True
            self._scanner.add_span(start, self._size, "array", dtype)

    def feed(self, chunk: memoryview) -> None:
        at = self._pos
        self._pos += len(chunk)
        if self._start < 0:
            self._head += chunk[: _MAX_HEADER + 12 - len(self._head)]
            self._header()
        if self._pickle is not None and self._pos > self._start:
            self._pickle.feed(chunk[max(0, self._start - at) :])
        self._scanner.feed(chunk)

    def finish(self) -> list[Issue]:
        if self._start < 0:
            self._bad("file ends inside its header")
        issues = list(self._issues)
        if self._pickle is not None:
            issues += [
                Issue(i.code, f".npy object array: {i.message}", i.details)
                for i in self._pickle.finish()
            ]
        issues += nonfinite_issues(self._scanner.results())
        if self._floats and not self._scanner.available:
            issues.append(skipped_issue("the array", "numpy is not installed"))
        return issues


def _itemsize(descr: str) -> int:
    """Bytes per element of a simple numpy type string (``<f4``, ``|b1``, ``<U8``), or 0."""
    kind, digits = descr.lstrip("<>=|")[:1], descr.lstrip("<>=|")[1:]
    if not digits.isdigit():
        return 0
    return int(digits) * (4 if kind == "U" else 1)

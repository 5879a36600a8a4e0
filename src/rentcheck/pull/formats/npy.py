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
import warnings
from typing import Any, NamedTuple

from rentcheck.pull.formats.base import Issue, TensorInfo
from rentcheck.pull.formats.finite import (
    FiniteScanner,
    nonfinite_issues,
    numpy_or_none,
    skipped_issue,
)
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
        self._unscanned = ""
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
        if not isinstance(descr, str | list) or not all(
            isinstance(d, int) and d >= 0 for d in shape
        ):
            self._bad(f"header describes {descr!r} of shape {shape!r}")
            return
        kind = _dtype_of(descr)
        if kind.objects:
            self._pickle = PickleStreamValidator(
                self._size - start, legacy=False, extra_allowed=self._allowed
            )
            return
        itemsize = kind.itemsize
        want = start + math.prod(shape) * itemsize if itemsize else self._size
        if want != self._size:
            self._bad(f"{descr} {list(shape)} needs {want} bytes, the file has {self._size}")
            return
        self.tensors = (TensorInfo("array", str(descr), self._size - start),)
        if kind.scan is not None:
            self._floats = True
            self._scanner.add_span(start, self._size, "array", kind.scan)
        elif kind.floats:
            self._unscanned = f"its float elements ({descr!r}) are of no kind the scan reads"

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
        if self._unscanned:
            issues.append(skipped_issue("the array", self._unscanned))
        return issues


class _Kind(NamedTuple):
    itemsize: int
    objects: bool  # holds Python objects: the data is a pickle np.load runs
    scan: str | None  # the NaN/Inf scanner's kind, when the elements are plain floats
    floats: bool  # holds floats of some kind (structured fields, long doubles)


_SCAN_KINDS = {("f", 2): "F16", ("f", 4): "F32", ("f", 8): "F64", ("c", 8): "C64",
               ("c", 16): "C128"}  # fmt: skip


def _dtype_of(descr: str | list[Any]) -> _Kind:
    """What np.load makes of ``descr``: it calls ``numpy.dtype(descr)``, so every spelling
    numpy accepts (``'f8'``, ``'float64'``, ``'d'``, ``'>f4'``, ``'object'``) is read as numpy
    reads it. Without numpy only the plain ``<f4``-style spellings are known; anything else
    is treated as an object array (a pickle), never as bytes nobody runs."""
    np = numpy_or_none()
    if np is None or not isinstance(descr, str):
        if not isinstance(descr, str):  # a structured dtype: numpy's own reader decides
            return _structured(np, descr)
        size = _itemsize(descr)
        simple = _FLOATS.get(descr.replace("=", "<"))
        plain = bool(size) and descr[:1] in "<>=|" and "O" not in descr
        return _Kind(size, not plain, simple, simple is not None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = np.dtype(descr)
    except (TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
        return _Kind(0, True, None, False)  # numpy refuses it: judged as the worst case
    if dt.hasobject:
        return _Kind(dt.itemsize, True, None, False)
    base = dt.base if dt.subdtype is not None else dt
    scan = None
    if base.fields is None and base.kind in "fc":
        scan = _SCAN_KINDS.get((base.kind, base.itemsize))
        if scan is not None and base.byteorder == ">":
            scan += "BE"
    floats = scan is not None or _has_floats(dt)
    return _Kind(dt.itemsize, False, scan, floats)


def _structured(np: Any, descr: list[Any]) -> _Kind:
    """A structured descr (a list of fields), read by ``numpy.lib.format.descr_to_dtype`` as
    np.load reads it; without numpy it is judged as the worst case, an object array."""
    if np is None:
        return _Kind(0, True, None, False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dt = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError, SyntaxError, RecursionError):
        return _Kind(0, True, None, False)
    return _Kind(dt.itemsize, bool(dt.hasobject), None, _has_floats(dt))


def _has_floats(dt: Any) -> bool:
    if dt.fields is not None:
        return any(_has_floats(field[0]) for field in dt.fields.values())
    base = dt.base if dt.subdtype is not None else dt
    return bool(base.kind in "fc")


def _itemsize(descr: str) -> int:
    """Bytes per element of a simple numpy type string (``<f4``, ``|b1``, ``<U8``), or 0."""
    kind, digits = descr.lstrip("<>=|")[:1], descr.lstrip("<>=|")[1:]
    if not digits.isdigit():
        return 0
    return int(digits) * (4 if kind == "U" else 1)

"""safetensors: header checks identical to the reference reader, plus NaN/Inf, in one stream.

Layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the data buffer. Every
check the reference reader makes is arithmetic on the header and the file length; rentcheck is
stricter in three places: duplicate tensor names are rejected, the header is capped at
``MAX_HEADER_BYTES`` (8 MiB, about 60k tensors; the reference allows 100 MB) and its JSON is
pre-screened so that a hostile header cannot blow up memory while it is parsed.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rentcheck.errors import FormatError
from rentcheck.pull.formats.base import Issue, TensorInfo
from rentcheck.pull.formats.finite import (
    FLOAT_SPECS,
    FiniteScanner,
    nonfinite_issues,
    skipped_issue,
)
from rentcheck.pull.rules import SAFETENSORS_MALFORMED

__all__ = [
    "DTYPE_BITS",
    "MAX_HEADER_BYTES",
    "SafetensorsEntry",
    "SafetensorsHeader",
    "SafetensorsValidator",
    "parse_header",
    "parse_prefix",
    "read_header_length",
]

MAX_HEADER_BYTES = 8 * 1024 * 1024
MAX_DIMS = 64
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}

# A string token, or an unterminated one running to the end: every match attempt that starts at
# a quote succeeds, so substitution stays linear even on hostile input.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
_NON_INT_IN_ARRAY = re.compile(rb"\[[0-9,\s]*[^\]0-9,\s]")
_BRACES = bytes(b for b in range(256) if b not in b"{}")


@dataclass(frozen=True)
class SafetensorsEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    header_len: int
    entries: tuple[SafetensorsEntry, ...]
    metadata: Mapping[str, str]

    @property
    def data_start(self) -> int:
        return 8 + self.header_len


def read_header_length(first8: bytes, file_size: int, max_header: int = MAX_HEADER_BYTES) -> int:
    """N from the first 8 bytes, checked against the cap and the file size (no allocation)."""
    if len(first8) < 8 or file_size < 8:
        raise FormatError(f"file is {file_size} bytes, too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", first8[:8])
    if n > max_header:
        hint = " (a git-lfs pointer or text file?)" if first8[:8].isascii() else ""
        raise FormatError(f"header length {n} exceeds the cap of {max_header} bytes{hint}")
    if 8 + n > file_size:
        raise FormatError(f"header length {n} runs past the end of the {file_size}-byte file")
    return int(n)


def _prescreen(raw: bytes) -> None:
    """Reject JSON shapes no safetensors header has, before the parser allocates anything."""
    skeleton = _STRING.sub(b'""', raw)
    if _NON_INT_IN_ARRAY.search(skeleton):
        raise FormatError("header arrays must hold only integers (shape, data_offsets)")
    if skeleton.count(b":") * 10 > len(raw) + 40:
        raise FormatError("header is too dense to be a safetensors header")
    depth = 0
    for brace in skeleton.translate(None, _BRACES):
        depth += 1 if brace == 0x7B else -1
        if depth > 2:
            raise FormatError("header objects are nested deeper than tensor entries allow")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FormatError(f"duplicate key {key!r} in header")
        for text in (key, value) if isinstance(value, str) else (key,):
            if not _utf8(text):  # Python's json keeps a lone "\ud800"; the Rust parser refuses
                raise FormatError(f"a lone surrogate escape in {text!r} (the reader refuses it)")
        out[key] = value
    return out


_U64 = 1 << 64


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int and 0 <= v < _U64 for v in value):
        raise FormatError(f"{what} must be a list of integers from 0 to 2**64 - 1")
    return value


def _overflows(shape: list[int], bits: int) -> bool:
    """Whether the reader's checked product (left to right, then times the element's bits)
    leaves 64 bits on the way, as it refuses even a shape whose last dimension is 0."""
    acc = 1
    for dim in (*shape, bits):
        acc *= dim
        if acc >= _U64:
            return True
    return False


def _entry(name: str, info: Any) -> SafetensorsEntry:
    if not isinstance(info, dict):
        raise FormatError(f"tensor {name!r}: entry must be an object")
    dtype = info.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise FormatError(f"tensor {name!r}: unknown dtype {dtype!r}")
    shape = _int_list(info.get("shape"), f"tensor {name!r}: shape")
    if len(shape) > MAX_DIMS:
        raise FormatError(f"tensor {name!r}: {len(shape)} dimensions (more than {MAX_DIMS})")
    offsets = _int_list(info.get("data_offsets"), f"tensor {name!r}: data_offsets")
    if len(offsets) != 2 or offsets[1] < offsets[0]:
        raise FormatError(f"tensor {name!r}: data_offsets must be [begin, end] with end >= begin")
    if _overflows(shape, DTYPE_BITS[dtype]):
        raise FormatError(f"tensor {name!r}: the size of {dtype}{shape} overflows 64 bits")
    bits = math.prod(shape) * DTYPE_BITS[dtype]
    if bits % 8:
        raise FormatError(f"tensor {name!r}: {dtype}{shape} does not fill a whole byte")
    if bits // 8 != offsets[1] - offsets[0]:
        raise FormatError(
            f"tensor {name!r}: {dtype}{shape} needs {bits // 8} bytes, "
            f"data_offsets span {offsets[1] - offsets[0]}"
        )
    return SafetensorsEntry(name, dtype, tuple(shape), offsets[0], offsets[1])


def parse_header(raw: bytes, *, data_size: int) -> SafetensorsHeader:
    """Validate the JSON header ``raw`` for a data buffer of ``data_size`` bytes."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"header is not valid UTF-8 (byte {exc.start})") from None
    _prescreen(raw)
    try:
        top = json.loads(text, object_pairs_hook=_pairs)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"header is not valid JSON: {exc}") from None
    if not isinstance(top, dict):
        raise FormatError("header must be a JSON object")
    metadata: dict[str, str] = {}
    entries: list[SafetensorsEntry] = []
    for name, info in top.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise FormatError("__metadata__ must map strings to strings")
            metadata = info
        else:
            entries.append(_entry(name, info))
    expected = 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin != expected:
            kind = "gap before" if e.begin > expected else "overlap at"
            raise FormatError(
                f"tensor {e.name!r}: {kind} data offset {e.begin} (expected {expected})"
            )
        expected = e.end
    if expected != data_size:
        how = "truncated" if data_size < expected else f"{data_size - expected} trailing bytes"
        raise FormatError(
            f"data buffer is {data_size} bytes but the tensors cover {expected} ({how})"
        )
    return SafetensorsHeader(len(raw), tuple(entries), metadata)


def parse_prefix(
    blob: bytes, file_size: int, max_header: int = MAX_HEADER_BYTES
) -> SafetensorsHeader:
    """Parse a header from the first bytes of a file of ``file_size`` bytes."""
    n = read_header_length(blob[:8], file_size, max_header)
    if len(blob) < 8 + n:
        raise FormatError(f"only {len(blob)} bytes given for a {8 + n}-byte header")
    return parse_header(bytes(blob[8 : 8 + n]), data_size=file_size - 8 - n)


class SafetensorsValidator:
    """Stream validator: header at the start, then NaN/Inf over every floating tensor."""

    def __init__(self, file_size: int, *, max_header: int = MAX_HEADER_BYTES) -> None:
        self._size = file_size
        self._max = max_header
        self._buf = bytearray()
        self._need: int | None = None  # 8 + N once N is known
        self._header: SafetensorsHeader | None = None
        self._issues: list[Issue] = []
        self._scanner = FiniteScanner()

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        if self._header is None:
            return ()
        return tuple(TensorInfo(e.name, e.dtype, e.end - e.begin) for e in self._header.entries)

    def _fail(self, message: str) -> None:
        self._issues.append(Issue(SAFETENSORS_MALFORMED, message))
        self._need = -1

    def feed(self, chunk: memoryview) -> None:
        if self._header is None and self._need != -1:
            self._grow(chunk)
        self._scanner.feed(chunk)

    def _grow(self, chunk: memoryview) -> None:
        want = (self._need or 8) - len(self._buf)
        self._buf += chunk[:want]
        if self._need is None and len(self._buf) == 8:
            try:
                self._need = 8 + read_header_length(bytes(self._buf), self._size, self._max)
            except FormatError as exc:
                self._fail(exc.message)
                return
            self._buf += chunk[want : want + self._need - 8]
        if self._need is not None and len(self._buf) == self._need:
            try:
                header = parse_header(bytes(self._buf[8:]), data_size=self._size - self._need)
            except FormatError as exc:
                self._fail(exc.message)
                return
            finally:
                self._buf = bytearray()
            self._header = header
            for e in sorted(header.entries, key=lambda e: e.begin):
                start = header.data_start + e.begin
                self._scanner.add_span(start, header.data_start + e.end, e.name, e.dtype)

    def finish(self) -> list[Issue]:
        if self._need is None:
            self._fail(f"file is {self._size} bytes, too short for the 8-byte header length")
        elif self._header is None and self._need != -1:
            self._fail(f"file ends inside the header ({self._size} bytes)")
        issues = list(self._issues)
        if self._header is not None:
            issues += nonfinite_issues(self._scanner.results())
            floats = any(e.dtype in FLOAT_SPECS and e.end > e.begin for e in self._header.entries)
            if floats and not self._scanner.available:
                issues.append(skipped_issue("floating tensors", "numpy is not installed"))
        return issues

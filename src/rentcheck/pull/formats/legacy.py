"""Pickle streams: torch's legacy (non-zip) format and bare ``.pkl`` files.

Legacy torch (``_use_new_zipfile_serialization=False``) is five pickles (magic number, protocol
1001, sys info, the object, the sorted storage keys) followed, for each key, by an 8-byte element
count and the raw storage bytes. The pickles are buffered (capped) and analysed statically; the
storages are streamed, their counts checked against the persistent ids and their floats scanned,
and the file must end exactly after the last one. A bare pickle file is one or more complete
pickles and nothing else.
"""

from __future__ import annotations

import io
import pickletools
from collections.abc import Mapping

from rentcheck.pull.formats.base import Issue, TensorInfo
from rentcheck.pull.formats.finite import FiniteScanner, nonfinite_issues, skipped_issue
from rentcheck.pull.formats.pickle_safety import (
    GENOPS_ERRORS,
    MAX_OPS,
    PickleReport,
    StorageRef,
    scan_pickle,
)
from rentcheck.pull.formats.torchzip import MAX_PICKLE_BYTES, pickle_issues
from rentcheck.pull.rules import (
    PICKLE_MALFORMED,
    TORCH_WILL_REFUSE,
    UNKNOWN_CHECKPOINT_FORMAT,
    VERIFY_LIMIT_REACHED,
)

__all__ = ["LEGACY_MAGIC", "PickleStreamValidator", "starts_with_legacy_magic"]

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
#: Pickles in one bare pickle file: torch's legacy format has five; joblib a handful per array.
MAX_PICKLES = 10_000


def _ops(data: bytes, start: int) -> list[tuple[str, object]] | None:
    """The opcodes of the pickle at ``start``, or None if it does not disassemble."""
    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        return [(op.name, arg) for op, arg, _ in pickletools.genops(stream)]
    except GENOPS_ERRORS:
        return None


def _single_int(data: bytes, start: int) -> int | None:
    """The value of a pickle that holds one integer (the magic number, the protocol)."""
    stream = io.BytesIO(data)
    stream.seek(start)
    values: list[object] = []
    try:
        for op, arg, _ in pickletools.genops(stream):
            if op.name == "STOP" or len(values) > 1:
                break
            if op.name not in ("PROTO", "FRAME"):
                values.append(arg)
    except GENOPS_ERRORS:
        return None
    if len(values) == 1 and type(values[0]) is int:
        return values[0]
    return None


def starts_with_legacy_magic(head: bytes) -> bool:
    """Whether the first pickle in ``head`` is torch's legacy magic number."""
    return _single_int(head, 0) == LEGACY_MAGIC


def _string_list(data: bytes, start: int) -> list[str] | None:
    """The strings of a pickled ``list[str]`` (the legacy storage keys), or None when the
    pickle's value is anything else. Its stack is run, not its strings collected: without
    its APPENDS, STOP returns the last key (a str, whose characters torch then looks up)."""
    ops = _ops(data, start)
    if ops is None:
        return None
    stack: list[object] = []
    marks: list[int] = []
    for name, arg in ops:
        floor = marks[-1] if marks else 0
        if name in ("PROTO", "FRAME"):
            continue
        if name == "EMPTY_LIST":
            stack.append([])
        elif name == "MARK":
            marks.append(len(stack))
        elif name in ("BINUNICODE", "SHORT_BINUNICODE") and isinstance(arg, str):
            stack.append(arg)
        elif name in ("BINPUT", "LONG_BINPUT", "MEMOIZE") and len(stack) > floor:
            continue
        elif name == "APPEND" and len(stack) >= floor + 2 and isinstance(stack[-2], list):
            stack[-2].append(stack.pop())
        elif name == "APPENDS" and marks and marks[-1] >= 1 and isinstance(stack[floor - 1], list):
            items = stack[floor:]
            del stack[floor:]
            marks.pop()
            stack[-1].extend(items)  # type: ignore[attr-defined]
        elif name == "STOP" and not marks and len(stack) == 1 and isinstance(stack[0], list):
            keys = stack[0]
            return keys if all(isinstance(k, str) for k in keys) else None
        else:
            return None
    return None


class PickleStreamValidator:
    """``legacy=True`` for torch checkpoints (.pt/.pth/.ckpt/.bin), False for bare pickles."""

    def __init__(
        self,
        file_size: int,
        *,
        legacy: bool,
        extra_allowed: tuple[str, ...] = (),
        full_pickle: bool = False,
    ) -> None:
        self._size = file_size
        self._legacy = legacy
        self._torch = legacy  # read by torch.load (weights_only) rather than pickle.load
        self._full_pickle = full_pickle
        self._capped: str | None = None
        self._held = b""  # the buffered bytes once analysed, until they are streamed
        self._allowed = extra_allowed
        self._cap = min(file_size, MAX_PICKLE_BYTES)
        self._buf = bytearray()
        self._next_try = min(64 * 1024, self._cap)
        self._issues: list[Issue] = []
        self._scanner = FiniteScanner()
        self._pos = 0
        self._done = False  # pickles analysed (or given up)
        self._reports: list[PickleReport] = []
        self._queue: list[StorageRef] = []  # legacy storages in file order
        self._views: Mapping[str, tuple[tuple[int, int], ...]] = {}  # what tensors cover
        self._index = 0
        self._seg_start = -1  # where the storage section starts; -1 = no storage streaming
        self._phase = "count"  # count | data | end
        self._count = bytearray()
        self._left = 0
        self._end = 0

    @property
    def tensor_paths(self) -> frozenset[str]:
        """The dotted path of every tensor in the object (legacy: the fourth pickle)."""
        if self._legacy and len(self._reports) > 3:
            return self._reports[3].tensor_paths
        return frozenset()

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        return tuple(
            TensorInfo(s.tensor or s.key, s.storage_type, s.numel * s.itemsize) for s in self._queue
        )

    def feed(self, chunk: memoryview) -> None:
        if self._done:
            self._process(chunk)
            return
        room = self._cap - len(self._buf)
        self._buf += chunk[:room]
        rest = chunk[room:]
        final = len(self._buf) >= self._cap
        if len(self._buf) >= self._next_try or final:
            self._next_try = 2 * len(self._buf)
            self._analyse(final)
        if self._done:
            buffered, self._held = self._held, b""
            self._process(memoryview(buffered))
            self._process(rest)

    # -- the pickles ----------------------------------------------------------------------
    def _scan_all(self, data: bytes, count: int | None) -> list[PickleReport] | None:
        """``count`` pickles (or all up to EOF when None); None if the data ran out first."""
        reports: list[PickleReport] = []
        pos, ops_left = 0, MAX_OPS
        while (count is None and pos < len(data)) or (count is not None and len(reports) < count):
            if len(reports) >= MAX_PICKLES:
                self._capped = f"more than {MAX_PICKLES} pickles in one file"
                break
            report = scan_pickle(data, start=pos, extra_allowed=self._allowed, max_ops=ops_left)
            ops_left -= report.ops
            if report.capped:
                self._capped = f"{report.capped} across its pickles"
            if report.malformed and report.end >= len(data) - 1 and len(data) < self._cap:
                return None
            reports.append(report)
            if report.malformed:
                break
            pos = report.end
        return reports

    def _analyse(self, final: bool) -> None:
        if not self._legacy and not final:
            return  # a bare pickle stream is judged whole, once
        data = bytes(self._buf)
        reports = self._scan_all(data, 5 if self._legacy else None)
        if reports is None or (not self._legacy and not final):
            if final:
                self._give_up("file ends inside its pickles")
            return
        if self._legacy and _single_int(data, 0) != LEGACY_MAGIC:
            self._issues.append(
                Issue(
                    UNKNOWN_CHECKPOINT_FORMAT,
                    "pickle without torch's magic number: torch.load cannot read it",
                )
            )
            self._legacy = False
            if not final:
                return
            reports = self._scan_all(data, None) or []
        self._done = True
        self._reports = reports
        self._buf, self._held = bytearray(), data  # one copy of the pickles, not three
        if self._capped and not any(r.capped for r in reports):
            self._issues.append(Issue(VERIFY_LIMIT_REACHED, f"{self._capped}; not proved safe"))
            return
        for i, report in enumerate(reports):
            self._issues += pickle_issues(
                report, f"pickle {i + 1}", torch=self._torch, full_pickle=self._full_pickle
            )
        if any(r.malformed for r in reports):
            return
        if not self._legacy:
            if len(data) < self._size:
                self._issues.append(
                    Issue(
                        VERIFY_LIMIT_REACHED,
                        f"pickle data beyond the first {len(data)} bytes was not scanned; "
                        "not proved safe",
                    )
                )
            return
        self._legacy_layout(data, reports)

    def _legacy_layout(self, data: bytes, reports: list[PickleReport]) -> None:
        if _single_int(data, reports[0].end) != LEGACY_PROTOCOL:
            self._malformed(f"legacy protocol is not {LEGACY_PROTOCOL}")
            return
        keys = _string_list(data, reports[3].end)
        storages = reports[3].storages
        if keys is None or sorted(keys) != sorted(storages):
            self._malformed("the storage key list does not match the storages the object uses")
            return
        self._queue = [storages[k] for k in keys]
        self._views = reports[3].views
        if reports[3].persid_sizes - {6}:  # ("storage", type, key, location, numel, view)
            self._issues.append(
                Issue(
                    TORCH_WILL_REFUSE,
                    "torch will refuse to load this with weights_only=True: a legacy storage "
                    "reference without the six items torch unpacks",
                )
            )
        for key in reports[3].bad_views:  # torch refuses a view past its storage's elements
            ref = storages[key]
            self._issues.append(
                Issue(
                    TORCH_WILL_REFUSE,
                    f"torch will refuse to load this with weights_only=True: tensor "
                    f"{ref.tensor or key!r} reaches past the end of its storage",
                )
            )
        self._seg_start = reports[4].end
        self._phase = "count" if keys else "end"
        self._end = self._seg_start

    def _give_up(self, message: str) -> None:
        self._done = True
        self._malformed(message)

    def _malformed(self, message: str) -> None:
        self._issues.append(Issue(PICKLE_MALFORMED, message))

    # -- the storages ---------------------------------------------------------------------
    def _process(self, data: memoryview) -> None:
        base = self._pos
        off = max(0, self._seg_start - base) if self._seg_start >= 0 else len(data)
        while off < len(data) and self._phase != "end":
            if self._phase == "count":
                take = bytes(data[off : off + 8 - len(self._count)])
                self._count += take
                off += len(take)
                if len(self._count) == 8:
                    self._start_storage(base + off)
            else:
                take_n = min(self._left, len(data) - off)
                off += take_n
                self._left -= take_n
                if not self._left:
                    self._next_storage(base + off)
        self._scanner.feed(data)
        self._pos = base + len(data)

    def _start_storage(self, at: int) -> None:
        ref = self._queue[self._index]
        count = int.from_bytes(self._count, "little")
        self._count = bytearray()
        if count != ref.numel:
            self._malformed(
                f"storage {ref.key}: stream holds {count} elements, the pickle declares {ref.numel}"
            )
        self._left = count * ref.itemsize
        if ref.scan_dtype is not None:
            # only the bytes some tensor's view covers are values (see storage_views)
            for start, stop in self._views.get(ref.key, ((0, self._left),)):
                end = min(stop, self._left)
                if start < end:
                    name = ref.tensor or ref.key
                    self._scanner.add_span(at + start, at + end, name, ref.scan_dtype)
        self._phase = "data"
        if not self._left:
            self._next_storage(at)

    def _next_storage(self, at: int) -> None:
        self._index += 1
        self._phase = "count" if self._index < len(self._queue) else "end"
        self._end = at

    def finish(self) -> list[Issue]:
        if not self._done:
            self._analyse(final=True)
            if not self._done:
                self._give_up("file is empty" if not self._size else "file ends inside a pickle")
        issues = list(self._issues)
        if self._seg_start >= 0 and self._phase != "end":
            ref = self._queue[self._index]
            issues.append(
                Issue(
                    PICKLE_MALFORMED,
                    f"file ends inside storage {ref.key} ({ref.tensor or 'unnamed'})",
                )
            )
        elif self._seg_start >= 0 and self._end != self._size:
            issues.append(
                Issue(
                    PICKLE_MALFORMED,
                    f"{self._size - self._end} trailing bytes after the last storage",
                )
            )
        issues += nonfinite_issues(self._scanner.results())
        floats = any(s.scan_dtype for s in self._queue)
        if floats and not self._scanner.available:
            issues.append(skipped_issue("floating storages", "numpy is not installed"))
        return issues

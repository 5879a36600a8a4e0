"""torch.distributed.checkpoint directories: ``.metadata`` against the ``.distcp`` files.

DCP's ``.metadata`` maps every tensor chunk and byte item to ``(relative_path, offset,
length)`` in a ``.distcp`` file, and each such range is itself a ``torch.save`` archive that
DCP loads with ``weights_only=True``. So once ``.metadata`` passed the safety scan (every global
on DCP's own list), this module reads it back with the pure-Python unpickler (a dict memo,
work bounded by the file's size) whose ``find_class`` returns inert record classes of its own
(nothing is imported, no class of the file's choosing is built), checks that every named
range lies inside an existing ``.distcp`` next to it, and runs the torch-zip validator over
each range: structure, CRCs, pickle safety and NaN/Inf per tensor. A range written through
DCP's ZStandard extension is decompressed first (``dcp_zstd``), bounded by the bytes its
chunk's shape and dtype need.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import stat
import struct
from collections.abc import Callable, Iterator
from typing import Any

from rentcheck.pull.formats.base import Issue, PRead
from rentcheck.pull.formats.pickle_allowlist import TORCH_DTYPES
from rentcheck.pull.formats.policy import DCP_METADATA
from rentcheck.pull.formats.torchzip import TorchZipValidator
from rentcheck.pull.rules import (
    COMPRESSED_RANGE_UNSCANNED,
    DCP_CHECKPOINT_DAMAGED,
    VERIFY_LIMIT_REACHED,
)

__all__ = ["MAX_DCP_ITEMS", "WORK_PER_BYTE", "check_dcp"]

MAX_DCP_ITEMS = 200_000  # storage entries read back from one .metadata
WORK_PER_BYTE = 8  # state entries applied per byte of .metadata (DCP's own: well under 1)
_CHUNK = 4 * 1024 * 1024


class _Record:
    """Stands in for every class ``.metadata`` names: keeps its name, arguments and state."""

    qual = "?"
    budget: list[int]  # work left to the reader that made this class, shared by its records
    args: tuple[Any, ...]
    state: dict[str, Any]
    parts: tuple[Any, ...]  # a state that is a tuple (TensorProperties keeps its dtype there)

    def __new__(cls, *args: Any) -> _Record:  # NEWOBJ calls __new__ only
        self = super().__new__(cls)
        self.args, self.state, self.parts = args, {}, ()
        return self

    def __init__(self, *args: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        parts = state if isinstance(state, tuple) else (state,)
        # one big state dict applied by a thousand BUILDs is quadratic work in a small file
        self.budget[0] -= 1 + sum(len(p) for p in parts if isinstance(p, dict))
        if self.budget[0] < 0:
            raise pickle.UnpicklingError("more work than its size allows (a work budget)")
        self.parts = parts
        for part in parts:
            if isinstance(part, dict):
                self.state.update(part)

    def __reduce__(self) -> Any:  # pragma: no cover - never pickled
        raise TypeError("records are read-only")

    def __hash__(self) -> int:
        return id(self)


def _record_class(qual: str, budget: list[int]) -> type[_Record]:
    return type(qual.rsplit(".", 1)[-1], (_Record,), {"qual": qual, "budget": budget})


def _value(qual: str) -> Callable[..., Any]:
    return lambda *args: args[0] if len(args) == 1 else args


class _Reader(pickle._Unpickler):  # the pure-Python unpickler, on purpose
    """Builds records, never the classes named in the file.

    The pure-Python unpickler, not CPython's C one: its memo is a dict, where the C memo is an
    array sized by the largest index a PUT names (one ``LONG_BINPUT 2**28`` in a few bytes of
    ``.metadata`` was 2 GB of RSS). Every opcode reads at least one byte of ``data`` and every
    record's ``__setstate__`` draws on a budget proportional to ``len(data)``, so the work is
    bounded by the file's size.
    """

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self._classes: dict[str, Any] = {}
        self._budget = [WORK_PER_BYTE * len(data) + 10_000]

    def find_class(self, module: str, name: str) -> Any:
        qual = f"{module}.{name}"
        if qual in self._classes:
            return self._classes[qual]
        if qual in DCP_METADATA:
            made: Any = _record_class(qual, self._budget)
        elif qual in ("torch.Size", "torch.serialization._get_layout"):
            made = _value(qual)
        elif module == "torch":  # dtypes: the value is its name
            made = qual
        else:
            raise pickle.UnpicklingError(f"global {qual!r} is not DCP's")
        self._classes[qual] = made
        return made

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids have no place in .metadata")


def _chunk_bytes(meta: _Record, index: _Record) -> int | None:
    """The bytes of the chunk ``index`` names (its shape times its dtype's size), if known."""
    chunks, at = meta.state.get("chunks"), index.state.get("index")
    if not isinstance(chunks, list) or not isinstance(at, int) or not 0 <= at < len(chunks):
        return None
    chunk = chunks[at]
    sizes = chunk.state.get("sizes") if isinstance(chunk, _Record) else None
    if not isinstance(sizes, (tuple, list)) or not all(isinstance(n, int) for n in sizes):
        return None
    props = meta.state.get("properties")
    dtype = props.parts[0] if isinstance(props, _Record) and props.parts else None
    known = TORCH_DTYPES.get(str(dtype).removeprefix("torch."))
    return math.prod(sizes) * (known[0] if known else 16)  # 16: the widest element


def _infos(metadata: Any) -> list[tuple[str, dict[str, Any], int | None]]:
    """(fully qualified name, storage info, the chunk's bytes for a tensor) per storage entry."""
    if not isinstance(metadata, _Record):
        raise ValueError("the top object is not DCP Metadata")
    tensors = metadata.state.get("state_dict_metadata") or {}
    storage = metadata.state.get("storage_data") or {}
    if not isinstance(tensors, dict) or not isinstance(storage, dict):
        raise ValueError("state_dict_metadata / storage_data are not mappings")
    out = []
    for index, info in list(storage.items())[:MAX_DCP_ITEMS]:
        if not isinstance(index, _Record) or not isinstance(info, _Record):
            raise ValueError("storage_data does not map MetadataIndex to _StorageInfo")
        fqn = str(index.state.get("fqn", "?"))
        meta = tensors.get(fqn)
        is_tensor = isinstance(meta, _Record) and meta.qual.endswith("TensorStorageMetadata")
        size = _chunk_bytes(meta, index) if is_tensor and isinstance(meta, _Record) else None
        out.append((fqn, info.state, size))
    return out


def _damaged(message: str) -> Issue:
    return Issue(DCP_CHECKPOINT_DAMAGED, message)


def _pieces(fd: int, offset: int, length: int) -> Iterator[bytes]:
    done = 0
    while done < length:
        piece = os.pread(fd, min(_CHUNK, length - done), offset + done)
        if not piece:
            return
        yield piece
        done += len(piece)


def _validate(size: int, pread: PRead, pieces: Iterator[bytes], fqn: str) -> list[Issue]:
    """A torch.save archive of ``size`` bytes, validated like a file; issues named by ``fqn``."""
    validator = TorchZipValidator(size, pread)
    for piece in pieces:
        validator.feed(memoryview(piece))
    issues = []
    for issue in validator.finish():
        details = dict(issue.details)
        if "tensor" in details:
            details["tensor"] = fqn
        issues.append(Issue(issue.code, f"{fqn}: {issue.message}", details))
    return issues


def _scan_range(fd: int, offset: int, length: int, fqn: str) -> list[Issue]:
    """The torch.save archive at ``[offset, offset + length)``."""

    def pread(off: int, n: int) -> bytes:
        n = max(0, min(n, length - off))
        return os.pread(fd, n, offset + off)

    return _validate(length, pread, _pieces(fd, offset, length), fqn)


def _scan_transformed(
    fd: int, offset: int, length: int, *, fqn: str, info: dict[str, Any], size: int | None
) -> list[Issue]:
    """A range DCP wrote through a stream transform: zstd is undone (bounded), others noted."""
    from rentcheck.pull.formats import dcp_zstd

    why = dcp_zstd.unknown(info.get("transform_descriptors"))
    if why is not None:
        message = f"{fqn}: range not scanned (structure, NaN/Inf): {why}; its digest was checked"
        return [Issue(COMPRESSED_RANGE_UNSCANNED, message)]
    return dcp_zstd.scan_zstd_range(
        fd,
        offset,
        length,
        fqn=fqn,
        cap=dcp_zstd.inflated_size_cap(size),
        validate=lambda total, pread, pieces: _validate(total, pread, pieces, fqn),
    )


#: What the pure-Python unpickler raises on a stream it cannot read (a stack or memo miss is
#: an IndexError/KeyError there, a bad frame a ValueError, a bad opcode an UnpicklingError).
_UNREADABLE = (
    pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, IndexError,
    KeyError, struct.error, OverflowError, RecursionError, MemoryError,
)  # fmt: skip


def check_dcp(directory: str, metadata: bytes) -> list[Issue]:
    """Every range ``.metadata`` names exists and is a sound torch.save archive."""
    try:
        infos = _infos(_Reader(metadata).load())
    except _UNREADABLE as exc:
        if "work budget" in str(exc):
            return [Issue(VERIFY_LIMIT_REACHED, f".metadata: {exc}; not proved safe")]
        return [_damaged(f".metadata cannot be read as DCP metadata: {exc}")]
    issues: list[Issue] = []
    fds: dict[str, tuple[int, int] | None] = {}
    try:
        for fqn, info, chunk_bytes in infos:
            rel, offset, length = (info.get(k) for k in ("relative_path", "offset", "length"))
            if (
                not isinstance(rel, str)
                or not isinstance(offset, int)
                or not isinstance(length, int)
            ):
                issues.append(_damaged(f"{fqn}: storage info without path, offset and length"))
                continue
            if "/" in rel or rel in ("", ".", ".."):
                issues.append(_damaged(f"{fqn}: data file {rel!r} is not in the directory"))
                continue
            if rel not in fds:
                fds[rel] = _open(os.path.join(directory, rel))
            opened = fds[rel]
            if opened is None:
                issues.append(_damaged(f"{fqn}: data file {rel!r} named by .metadata is missing"))
                continue
            fd, size = opened
            if offset < 0 or length < 0 or offset + length > size:
                issues.append(
                    _damaged(
                        f"{fqn}: .metadata places it at bytes {offset}..{offset + length} of "
                        f"{rel!r}, which holds {size}"
                    )
                )
                continue
            if info.get("transform_descriptors"):
                issues += _scan_transformed(
                    fd, offset, length, fqn=fqn, info=info, size=chunk_bytes
                )
            else:
                issues += _scan_range(fd, offset, length, fqn)
    finally:
        for opened in fds.values():
            if opened is not None:
                os.close(opened[0])
    return issues


def _open(path: str) -> tuple[int, int] | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st.st_size

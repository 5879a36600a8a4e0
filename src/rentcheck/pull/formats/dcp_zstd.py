"""DCP ranges written through the ZStandard extension: decompressed, bounded, then scanned.

``FileSystemWriter(path, _extensions=[ZStandard()])`` (torch 2.13,
``torch.distributed.checkpoint._extension``) writes each range as one zstd frame of the
``torch.save`` archive and records ``transform_descriptors=['stream.zstd/1']``; DCP's reader
decompresses the first frame (``zstandard``, else ``pyzstd``) and ``torch.load``s the result.
Here the frame is decompressed twice, never to disk and never whole in memory: once to learn
its length and keep its tail (the zip directory lives there), once to feed the torch-zip
validator, which then judges it exactly as an uncompressed range. The output is capped by what
``.metadata`` says the range holds; ``zstandard`` is optional and imported only here.
"""

from __future__ import annotations

import functools
import importlib
import io
import os
from collections.abc import Callable, Iterator
from types import ModuleType

from rentcheck.pull.formats.base import Issue
from rentcheck.pull.rules import (
    COMPRESSED_RANGE_UNSCANNED,
    DCP_CHECKPOINT_DAMAGED,
    VERIFY_LIMIT_REACHED,
)

__all__ = ["BYTES_ITEM_CAP", "ZSTD_DESCRIPTOR", "inflated_size_cap", "scan_zstd_range", "unknown"]

ZSTD_DESCRIPTOR = "stream.zstd"
#: A non-tensor item (``step``, a config dict) has no size in ``.metadata``; one that inflates
#: past this is no value a training loop saves.
BYTES_ITEM_CAP = 64 * 1024 * 1024
_SLACK = 1024 * 1024  # torch.save's own records around a tensor's bytes: about 1.5 KiB
_TAIL = 1024 * 1024  # kept from pass one: the zip directory of a one-tensor archive is ~1 KiB
_CHUNK = 1024 * 1024


def inflated_size_cap(tensor_bytes: int | None) -> int:
    """The most a range may inflate to: its tensor's bytes plus torch.save's records."""
    return BYTES_ITEM_CAP if tensor_bytes is None else tensor_bytes + _SLACK


def unknown(descriptors: object) -> str | None:
    """Why the transforms cannot be undone here (None: exactly one ``stream.zstd/1``)."""
    if not isinstance(descriptors, list) or not all(isinstance(d, str) for d in descriptors):
        return f"transform_descriptors {descriptors!r:.80} are not a list of names"
    names = [d.partition("/") for d in descriptors]
    # as ZStandard.from_descriptor: the name, then a version whose major part is 1
    if len(names) == 1 and names[0][0] == ZSTD_DESCRIPTOR and names[0][2].partition(".")[0] == "1":
        return None
    return f"transforms {descriptors!r:.80} (only one 'stream.zstd/1' is understood)"


@functools.lru_cache(maxsize=1)
def _zstandard() -> ModuleType | None:
    try:
        return importlib.import_module("zstandard")
    except ImportError:
        return None


class _Range(io.RawIOBase):
    """``[offset, offset + length)`` of an open file, read with ``pread``."""

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self._fd, self._at, self._end = fd, offset, offset + length

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        data = os.pread(self._fd, min(len(buf), self._end - self._at), self._at)
        buf[: len(data)] = data
        self._at += len(data)
        return len(data)


class _TooBig(Exception):
    pass


def _inflated(zstd: ModuleType, fd: int, offset: int, length: int, cap: int) -> Iterator[bytes]:
    """The first frame's bytes, in pieces of at most 1 MiB, never more than ``cap`` in all."""
    reader = zstd.ZstdDecompressor().stream_reader(_Range(fd, offset, length))
    produced = 0
    while True:
        piece = reader.read(_CHUNK)
        if not piece:
            return
        produced += len(piece)
        if produced > cap:
            raise _TooBig
        yield piece


def scan_zstd_range(
    fd: int,
    offset: int,
    length: int,
    *,
    fqn: str,
    cap: int,
    validate: Callable[[int, Callable[[int, int], bytes], Iterator[bytes]], list[Issue]],
) -> list[Issue]:
    """Inflate the range (at most ``cap`` bytes), then ``validate(size, pread, pieces)`` it."""
    zstd = _zstandard()
    if zstd is None:
        return [
            Issue(
                COMPRESSED_RANGE_UNSCANNED,
                f"{fqn}: zstd-compressed range not scanned (structure, NaN/Inf): zstandard is "
                "not installed; its digest was checked",
            )
        ]
    try:
        total, tail = 0, bytearray()
        for piece in _inflated(zstd, fd, offset, length, cap):
            total += len(piece)
            tail += piece
            if len(tail) > 2 * _TAIL:
                del tail[:-_TAIL]
        tail_at = total - len(tail)

        def pread(off: int, n: int) -> bytes:
            n = max(0, min(n, total - off))
            if off >= tail_at:
                return bytes(tail[off - tail_at : off - tail_at + n])
            out = bytearray()  # before the tail (never in a real archive): inflate again
            at = 0
            for piece in _inflated(zstd, fd, offset, length, cap):
                if at + len(piece) > off:
                    out += piece[max(0, off - at) : off - at + n]
                at += len(piece)
                if len(out) >= n:
                    break
            return bytes(out[:n])

        return validate(total, pread, _inflated(zstd, fd, offset, length, cap))
    except _TooBig:
        return [
            Issue(
                VERIFY_LIMIT_REACHED,
                f"{fqn}: the zstd range inflates past {cap} bytes, more than .metadata says it "
                "holds (a decompression bomb); not proved safe",
            )
        ]
    except zstd.ZstdError as exc:
        message = f"{fqn}: the zstd-compressed range does not decompress: {exc}"
        return [Issue(DCP_CHECKPOINT_DAMAGED, message)]

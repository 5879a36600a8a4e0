"""numpy ``.npz`` archives: a zip whose members are ``.npy`` files, each checked as one.

``numpy.load`` opens an ``.npz`` lazily and reads a member as an ``.npy`` when its bytes start
with the ``.npy`` magic (an object-array member is a pickle that ``allow_pickle=True`` runs).
So every such member, stored or deflated, gets the ``.npy`` verdict (header, length, NaN/Inf,
object arrays scanned as bare pickles), named by its member; a member whose CRC-32 does not
match its bytes is damage. The members are read by offset once the file has been hashed;
inflation is bounded by the size the directory declares, so a zip bomb costs nothing.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from rentcheck.errors import FormatError
from rentcheck.pull.formats.base import Issue, PRead, TensorInfo
from rentcheck.pull.formats.npy import NPY_MAGIC, NpyValidator
from rentcheck.pull.formats.torchzip import ACCEPT_HINT
from rentcheck.pull.formats.zipdir import (
    ZipAmbiguous,
    ZipRecord,
    parse_local_header,
    read_central_directory,
)
from rentcheck.pull.rules import PICKLE_MALFORMED, UNPROVEN_LOAD_SAFETY

__all__ = ["NpzValidator", "looks_like_npz"]

_CHUNK = 1 << 20


def looks_like_npz(names: list[str] | None) -> bool:
    """A zip every member of which is named ``*.npy`` (what ``numpy.savez`` writes)."""
    return bool(names) and all(n.endswith(".npy") for n in names or ())


class NpzValidator:
    def __init__(self, file_size: int, pread: PRead, *, extra_allowed: tuple[str, ...] = ()):
        self._size = file_size
        self._pread = pread
        self._allowed = extra_allowed
        self.tensors: tuple[TensorInfo, ...] = ()

    def feed(self, chunk: memoryview) -> None:
        """The members are read by offset in ``finish``: the hash pass needs nothing here."""

    def finish(self) -> list[Issue]:
        try:
            records, _ = read_central_directory(self._pread, self._size)
        except ZipAmbiguous as exc:
            return [Issue(UNPROVEN_LOAD_SAFETY, f".npz: {exc.message}; {ACCEPT_HINT}")]
        except (FormatError, struct.error) as exc:
            return [Issue(PICKLE_MALFORMED, f".npz: the zip directory cannot be read: {exc}")]
        issues: list[Issue] = []
        tensors: list[TensorInfo] = []
        for record in records:
            try:
                found, member_tensors = self._member(record)
            except (FormatError, struct.error, zlib.error) as exc:
                found, member_tensors = [f"cannot be read: {exc}"], ()
            for item in found:
                if isinstance(item, Issue):
                    issues.append(Issue(item.code, f"{record.name}: {item.message}", item.details))
                else:
                    issues.append(Issue(PICKLE_MALFORMED, f".npz member {record.name}: {item}"))
            tensors += [TensorInfo(record.name, t.dtype, t.nbytes) for t in member_tensors]
        self.tensors = tuple(tensors)
        return issues

    def _member(self, record: ZipRecord) -> tuple[list[Issue | str], tuple[TensorInfo, ...]]:
        if record.method not in (0, 8):
            return [f"compression method {record.method}, which numpy cannot read"], ()
        head = self._pread(record.header_offset, 30)
        _, _, _, name_len, extra_len = parse_local_header(head)
        start = record.header_offset + 30 + name_len + extra_len
        if start + record.csize > self._size:
            return ["its data runs past the end of the file"], ()
        validator: NpyValidator | None = None
        crc = 0
        total = 0
        first = b""  # the member's first bytes, however inflate splits them into pieces
        for inflated in self._inflated(record, start):
            piece = inflated
            if validator is None:
                first += inflated
                if len(first) < len(NPY_MAGIC) and len(first) < record.usize:
                    continue
                if not first.startswith(NPY_MAGIC):
                    return [], ()  # numpy returns a non-.npy member's bytes as they are
                validator = NpyValidator(record.usize, extra_allowed=self._allowed)
                piece, first = first, b""
            crc = zlib.crc32(piece, crc)
            total += len(piece)
            validator.feed(memoryview(piece))
        if validator is None:
            return [], ()
        problems: list[Issue | str] = []
        if total != record.usize:
            problems.append(f"holds {total} bytes, its directory entry says {record.usize}")
        elif crc != record.crc:
            problems.append("CRC-32 does not match its bytes (damaged in transit or on disk)")
        problems += validator.finish()
        return problems, validator.tensors

    def _inflated(self, record: ZipRecord, start: int) -> Iterator[bytes]:
        """The member's bytes, in pieces of at most 1 MiB, never more than it declares."""
        pos, end = start, start + record.csize
        if record.method == 0:
            while pos < end:
                n = min(_CHUNK, end - pos)
                yield self._pread(pos, n)
                pos += n
            return
        inflater = zlib.decompressobj(-15)
        produced = 0
        while pos < end or inflater.unconsumed_tail:
            if inflater.unconsumed_tail:
                raw = inflater.unconsumed_tail
            else:
                raw = self._pread(pos, min(_CHUNK, end - pos))
                pos += len(raw)
            piece = inflater.decompress(raw, _CHUNK)
            produced += len(piece)
            if produced > record.usize:
                raise FormatError(f"inflates past the {record.usize} bytes it declares")
            if piece:
                yield piece
            if inflater.eof:
                return

"""A joblib file's bytes as joblib's unpickler reads them: decompressed (bounded) and framed.

joblib picks the decompressor by the file's first bytes (zlib ``x``, gzip, bz2, xz, lzma-alone,
lz4), never by its name, and reads through it as a stream. ``Source`` does the same in 1 MiB
pieces, and only as far as the pickle reads. Its output is bounded: past 256 MiB, a stream that
inflates more than 1100:1 is a decompression bomb (deflate cannot pass 1032:1, so zlib and gzip
never do; bz2/xz/lzma can, and only an all-zero array that large would look like one).
``Unframer`` is pickle's: opcodes come from the current ``FRAME`` while it lasts, whereas joblib
reads array bytes from the file itself. Nothing is written to disk; the decompressors are the
standard library's (lz4 if installed).
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any

from rentcheck.pull.formats.base import PRead

__all__ = ["CODECS", "Capped", "Damaged", "Source", "Unframer", "sniff_codec"]

_CHUNK = 1024 * 1024
MAX_READ = 32 * 1024 * 1024  # one opcode argument, frame or line: as a bare pickle's cap
_BOMB_FLOOR = 256 << 20
_BOMB_RATIO = 1100
#: (first bytes, codec) in joblib's order of detection (``_detect_compressor``).
CODECS: tuple[tuple[bytes, str], ...] = (
    (b"\x78", "zlib"),
    (b"\x1f\x8b", "gzip"),
    (b"BZ", "bz2"),
    (b"\xfd\x37\x7a\x58\x5a", "xz"),
    (b"\x5d\x00", "lzma"),
    (b"\x04\x22\x4d\x18", "lz4"),
)


class Damaged(Exception):
    """The compressed stream is corrupt or cut short."""


class Capped(Exception):
    """More work than any real joblib file needs (a bomb, a giant opcode argument)."""


def sniff_codec(head: bytes) -> str | None:
    """The compressor joblib would pick for a file starting with ``head``, if any."""
    for prefix, codec in CODECS:
        if head.startswith(prefix):
            return codec
    return None


def _decompressor(codec: str) -> Any:
    if codec in ("zlib", "gzip"):
        return zlib.decompressobj(31 if codec == "gzip" else zlib.MAX_WBITS)
    if codec == "bz2":
        return importlib.import_module("bz2").BZ2Decompressor()
    if codec in ("xz", "lzma"):
        return importlib.import_module("lzma").LZMADecompressor()
    return importlib.import_module("lz4.frame").LZ4FrameDecompressor()  # ImportError: caller


class Source:
    """The stream joblib's unpickler reads: the file, or what its compressor inflates to."""

    def __init__(self, pread: PRead, size: int, codec: str | None, *, chunk: int = _CHUNK) -> None:
        self._pread, self._size, self.codec, self._chunk = pread, size, codec, chunk
        self._dec: Any = _decompressor(codec) if codec else None
        self._errors: tuple[type[BaseException], ...] = (zlib.error, OSError, EOFError, ValueError)
        if codec in ("xz", "lzma"):
            self._errors += (importlib.import_module("lzma").LZMAError,)
        elif codec == "lz4":
            self._errors += (RuntimeError,)
        self._in = 0  # bytes of the file consumed
        self._buf = bytearray()
        self._off = 0  # bytes of _buf already read
        self.pos = 0  # bytes of the stream read
        self._produced = 0
        self._cap = max(_BOMB_FLOOR, _BOMB_RATIO * size)
        self.cut_short = False  # the compressed stream ended before its end marker

    def _raw(self) -> bytes:
        n = min(self._chunk, self._size - self._in)
        data = self._pread(self._in, n) if n > 0 else b""
        self._in += len(data)
        return data

    def _inflate(self) -> bytes:
        d = self._dec
        if d.eof:
            return b""
        zlib_like = self.codec in ("zlib", "gzip")
        if zlib_like:
            data = d.unconsumed_tail or self._raw()
        else:
            data = self._raw() if d.needs_input else b""
        if not data and (zlib_like or d.needs_input):
            self.cut_short = True
            return b""
        try:
            return bytes(d.decompress(data, self._chunk))
        except self._errors as exc:
            raise Damaged(f"the {self.codec} stream is damaged: {exc}") from None

    def _more(self) -> bool:
        """Append the next piece of the stream to the buffer; False at its end."""
        if self._off > _CHUNK:
            del self._buf[: self._off]
            self._off = 0
        piece = self._raw() if self._dec is None else b""
        while self._dec is not None and not piece:
            piece = self._inflate()
            if not piece and (self._dec.eof or self.cut_short):
                break
        if not piece:
            return False
        self._produced += len(piece)
        if self._dec is not None and self._produced > self._cap:
            raise Capped(
                f"the {self.codec} stream inflates past {self._cap} bytes, more than "
                f"{_BOMB_RATIO}:1 (deflate's limit is 1032:1): a decompression bomb"
            )
        self._buf += piece
        return True

    def _take(self, n: int) -> bytes:
        data = bytes(self._buf[self._off : self._off + n])
        self._off += len(data)
        self.pos += len(data)
        return data

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        if n > MAX_READ:
            raise Capped(f"a single read of {n} bytes (more than {MAX_READ})")
        while len(self._buf) - self._off < n and self._more():
            pass
        return self._take(n)

    def peek(self) -> bytes:
        """The next byte, not consumed (empty at the end of the stream)."""
        if self._off >= len(self._buf):
            self._more()
        return bytes(self._buf[self._off : self._off + 1])

    def readline(self) -> bytes:
        while (end := self._buf.find(b"\n", self._off)) < 0:
            if len(self._buf) - self._off > MAX_READ:
                raise Capped(f"a line of more than {MAX_READ} bytes")
            if not self._more():
                return self._take(len(self._buf) - self._off)
        return self._take(end + 1 - self._off)

    def skip(self, n: int, sink: Any = None) -> int:
        """Consume up to ``n`` bytes, each piece passed to ``sink``; returns the count."""
        done = 0
        while done < n:
            if self._off >= len(self._buf) and not self._more():
                break
            with memoryview(self._buf) as view:
                piece = view[self._off : self._off + (n - done)]
                if sink is not None:
                    sink(piece)
                count = len(piece)
                piece.release()
            self._off += count
            self.pos += count
            done += count
        return done

    def trailing(self) -> int:
        """Bytes after what was read: left in the file, or still to inflate (0 when none)."""
        rest = len(self._buf) - self._off
        if self._dec is None:
            return rest + self._size - self._in
        if rest or self._more():
            return max(1, len(self._buf) - self._off)
        unused = len(getattr(self._dec, "unused_data", b"") or b"")
        return unused + self._size - self._in


class Unframer:
    """Opcode reads as pickle's ``_Unframer``: from the current frame while it lasts."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._frame: bytes | None = None
        self._at = 0

    def tell(self) -> int:
        return self.source.pos

    def read(self, n: int) -> bytes:
        if self._frame is not None:
            data = self._frame[self._at : self._at + n]
            if not data and n:
                self._frame = None
                return self.source.read(n)
            if len(data) < n:
                raise ValueError("pickle exhausted before end of frame")
            self._at += n
            return data
        return self.source.read(n)

    def readline(self) -> bytes:
        if self._frame is not None:
            end = self._frame.find(b"\n", self._at)
            if self._at >= len(self._frame):
                self._frame = None
                return self.source.readline()
            if end < 0:
                raise ValueError("pickle exhausted before end of frame")
            data = self._frame[self._at : end + 1]
            self._at = end + 1
            return data
        return self.source.readline()

    def in_frame(self) -> bool:
        """Whether opcodes are still being read from a frame that is not exhausted."""
        return self._frame is not None and self._at < len(self._frame)

    def load_frame(self, size: object) -> None:
        if self._frame is not None and self._at < len(self._frame):
            raise ValueError("beginning of a new frame before end of current frame")
        if not isinstance(size, int):
            raise ValueError("FRAME without a size")
        self._frame, self._at = self.source.read(size), 0

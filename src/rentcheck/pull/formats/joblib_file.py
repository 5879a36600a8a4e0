"""joblib files (``joblib.dump``, sklearn models): judged as ``joblib.load`` reads them.

``joblib.load`` picks a decompressor by the first bytes, then runs ``NumpyUnpickler``, an
unrestricted subclass of pickle's pure-Python unpickler, until ``STOP``. After the ``BUILD`` of
each ``NumpyArrayWrapper`` it reads that array straight from the file: a padding-length byte and
padding (joblib >= 1.2), then ``prod(shape) * itemsize`` bytes; an object array is a nested pickle
read by a fresh unpickler with the same ``find_class``. This module walks the stream the same
way without executing anything: the pickle opcodes through the symbolic machine (anything
outside the allow-list is hostile, as in a bare pickle; ``JOBLIB_GLOBALS`` are added), each
array's bytes counted (missing bytes are damage) and float arrays scanned for NaN/Inf, each
object array scanned as a pickle. The file is read by offset once it has been hashed (as
``.npz`` members are); compressed files are inflated in bounded pieces, never to disk.
"""

from __future__ import annotations

import pickletools
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import IO, cast

from rentcheck.pull.formats.base import Issue, PRead, TensorInfo
from rentcheck.pull.formats.finite import FiniteScanner, nonfinite_issues, skipped_issue
from rentcheck.pull.formats.joblib_machine import JOBLIB_OPS, JoblibMachine
from rentcheck.pull.formats.joblib_source import (
    Capped,
    Damaged,
    Source,
    Unframer,
    sniff_codec,
)
from rentcheck.pull.formats.joblib_values import ArraySpec, Unprovable
from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS
from rentcheck.pull.formats.pickle_machine import Handler, Machine, Malformed
from rentcheck.pull.formats.pickle_safety import (
    GENOPS_ERRORS,
    MAX_OPS,
    MAX_SCAN_SECONDS,
    PickleReport,
    report_of,
    step,
)
from rentcheck.pull.formats.torchzip import pickle_issues
from rentcheck.pull.rules import COMPRESSED_RANGE_UNSCANNED, PICKLE_MALFORMED, UNSAFE_PICKLE

__all__ = ["JoblibValidator", "joblib_codec"]

_MARK = b"joblib.numpy_pickle"
_SUFFIXES = (".joblib", ".jbl")
_WINDOW = 64 * 1024  # an uncompressed dump names its first wrapper within its first bytes
#: Every byte that starts a pickle opcode.
_OPCODES = frozenset(op.code.encode("latin-1") for op in pickletools.opcodes)
_SEARCH = 64 * 1024 * 1024  # how far a *.pkl is searched for joblib's wrapper (read once more)
_PEEK = 4096  # inflated bytes that decide whether a compressed file holds a pickle


def joblib_codec(
    rel: str, head: bytes, size: int, pread: PRead, is_pickle: Callable[[bytes, bool, bool], bool]
) -> str | None:
    """``"none"`` or the compressor when the file is one ``joblib.load`` reads, else None.

    joblib inflates whatever its first bytes name and unpickles the result, so a compressed
    file counts when it is named like a joblib or pickle file (``m.joblib``, ``m.pkl.gz``) or
    its first inflated bytes are a pickle (``is_pickle(data, named, complete)``); an
    uncompressed file when it is called ``*.joblib`` / ``*.jbl`` or is a pickle that names
    joblib's array wrapper in its first 64 KiB.
    """
    name = rel.rsplit("/", 1)[-1].lower()
    named = any(part in name for part in (*_SUFFIXES, ".pkl", ".pickle"))
    codec = sniff_codec(head)
    if codec == "zlib" and (len(head) < 2 or ((head[0] << 8) | head[1]) % 31):
        codec = None  # not a zlib header (its check bits)
    if codec is not None:
        try:
            first = Source(pread, size, codec, chunk=4096).read(_PEEK)
        except ImportError:  # lz4 is not installed: the name decides
            return codec if named or name.endswith(".lz4") else None
        except Damaged:
            return codec if named else None
        if named or (first and is_pickle(first, False, len(first) < _PEEK)):
            return codec
        return None
    if name.endswith(_SUFFIXES):
        return "none"  # whatever its first byte: the unpickler runs any opcode first
    if len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5:
        window = head if size <= len(head) else pread(0, min(size, _WINDOW))
        if _MARK in window:
            return "none"
        if named and _names_wrapper(pread, size, len(window)):
            return "none"  # joblib.dump(vectorizer, "m.pkl"): its first array after 64 KiB
    return None


def _names_wrapper(pread: PRead, size: int, start: int) -> bool:
    """Whether joblib's array wrapper is named anywhere in the first ``_SEARCH`` bytes of a
    pickle-named file (a dump whose objects before its first array fill more than 64 KiB)."""
    keep = b""
    at = max(0, start - len(_MARK))
    end = min(size, _SEARCH)
    while at < end:
        piece = pread(at, min(1 << 20, end - at))
        if not piece:
            return False
        if _MARK in keep + piece:
            return True
        keep = piece[-len(_MARK) :]
        at += len(piece)
    return False


class _Stop(Exception):
    """joblib.load would have raised here (the reason is already recorded)."""


class _Walk:
    """One pass over the stream as joblib's unpickler reads it."""

    def __init__(self, source: Source, allowed: frozenset[str], *, plain_readable: bool) -> None:
        self.source = source
        self.plain_readable = plain_readable  # pickle.load may read this file too
        self.allowed = allowed
        self.scanner = FiniteScanner()
        self.fed = 0  # bytes given to the scanner (its own coordinates)
        self.ops_left = MAX_OPS
        self.deadline = time.monotonic() + MAX_SCAN_SECONDS
        self.arrays: list[ArraySpec] = []
        self.inner: list[tuple[str, PickleReport]] = []
        self.dual: str | None = None  # why pickle.load would read the stream differently
        self.parted = False  # pickle.load has stopped reading as joblib.load does

    def _feed(self, piece: memoryview) -> None:
        self.scanner.feed(piece)
        self.fed += len(piece)

    def pickle(
        self, m: Machine, handlers: dict[str, Handler], shadow: Machine | None = None
    ) -> PickleReport:
        """Run one pickle to its STOP (the outer stream, or an object array's).

        ``shadow``: the outer stream as plain ``pickle.load`` would go on into this nested
        pickle (its stack and memo, not fresh ones), stepped in lockstep until it stops."""
        reader = Unframer(self.source)
        ops = pickletools.genops(cast("IO[bytes]", reader))
        malformed, count = None, 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                while True:
                    try:
                        opcode, arg, _ = next(ops)
                    except StopIteration:  # pragma: no cover - genops raises before that
                        raise Malformed("no STOP opcode") from None
                    except GENOPS_ERRORS as exc:
                        message = str(exc) or type(exc).__name__
                        raise Malformed(f"{message} (after byte {self.source.pos})") from None
                    count += 1
                    self.ops_left -= 1
                    if self.ops_left < 0:
                        m.capped = f"more than {MAX_OPS} opcodes"
                        raise _Stop
                    if not count & 0xFFF and time.monotonic() > self.deadline:
                        m.capped = f"analysis took more than {MAX_SCAN_SECONDS:g} s"
                        raise _Stop
                    if shadow is not None:
                        try:
                            if step(shadow, opcode.name, arg, handlers):
                                shadow = None
                        except (Malformed, Unprovable):
                            shadow = None  # pickle.load raises here: nothing after it runs
                    if step(m, opcode.name, arg, handlers):
                        break
                    if opcode.name == "FRAME":
                        try:
                            reader.load_frame(arg)
                        except ValueError as exc:
                            raise Malformed(str(exc)) from None
                    if isinstance(m, JoblibMachine) and m.pending is not None:
                        spec, m.pending = m.pending, None
                        self.array(spec, m, reader)
            except Malformed as exc:
                malformed = str(exc)
            except Damaged as exc:
                malformed = str(exc)
            except (Capped, Unprovable) as exc:
                m.capped = f"{exc} (joblib.dump writes nothing like it)"
            except _Stop:
                malformed = malformed or (None if m.capped else "stopped at an object array")
        return report_of(m, end=self.source.pos, malformed=malformed, ops=count)

    def array(self, spec: ArraySpec, outer: Machine, reader: Unframer) -> None:
        """The bytes joblib reads for one array, right after its wrapper's BUILD."""
        # the first array where plain pickle.load parts from joblib.load (an empty unpadded one
        # is no such place: both read on from the same byte)
        first = self.plain_readable and not self.parted
        self.parted = self.parted or spec.has_object or spec.padded or spec.nbytes > 0
        self.arrays.append(spec)
        what = f"{spec.key} ({spec.code}, shape {list(spec.shape)})"
        shadow = None
        # Plain pickle.load (DCP, a training script) reads the same opcodes up to the first
        # array, then its bytes as opcodes. joblib >= 1.2 puts a padding length there (1..16,
        # no opcode), so pickle.load of a real dump stops at it; an object array's nested
        # pickle it runs on with the outer stack and memo, judged by a shadow machine.
        if first and spec.has_object and reader.in_frame():
            self.dual = (
                f"{what}: the frame of its wrapper goes on past the BUILD (joblib.dump ends it "
                "there), so pickle.load would read other opcodes than joblib.load"
            )
        elif first and spec.has_object and isinstance(outer, JoblibMachine):
            shadow = outer.plain_copy()
        elif first and self.parted and self.source.peek() in _OPCODES:
            self.dual = (
                f"{what}: its first byte is a pickle opcode, so pickle.load would run the "
                "array's bytes as opcodes where joblib.load reads them as data (joblib >= 1.2 "
                "writes a padding byte there that is no opcode)"
            )
        if spec.has_object:
            report = self.pickle(
                JoblibMachine(self.allowed, reads_arrays=False), JOBLIB_OPS, shadow
            )
            self.inner.append((spec.key, report))
            extra = [u for u in (shadow.unsafe if shadow else ()) if u not in report.unsafe]
            if extra and self.dual is None:
                self.dual = (
                    f"{what}: plain pickle.load (which may read a file of this name) runs its "
                    f"nested pickle on the outer stream's memo and so {extra[0]}; joblib.load "
                    "reads it as checked: if only joblib.load reads it, name it *.joblib"
                )
            if report.malformed or report.capped:
                raise _Stop
            return
        if spec.padded:
            pad = self.source.read(1)
            if not pad or self.source.skip(pad[0]) < pad[0]:
                raise Malformed(f"{what}: the stream ends inside its alignment padding")
        sink = None
        if spec.scan is not None:
            self.scanner.add_span(self.fed, self.fed + spec.nbytes, spec.key, spec.scan)
            sink = self._feed
        got = self.source.skip(spec.nbytes, sink)
        if got < spec.nbytes:
            raise Malformed(f"{what} needs {spec.nbytes} bytes, the stream ends after {got}")


class JoblibValidator:
    def __init__(
        self,
        file_size: int,
        pread: PRead,
        codec: str,
        *,
        rel: str = "",
        extra_allowed: tuple[str, ...] = (),
        full_pickle: bool = False,
    ) -> None:
        """``rel``: the file's name; a ``*.joblib`` / ``*.jbl`` or a compressed file is read by
        joblib.load only, any other also by plain pickle.load (both must be safe)."""
        self._size, self._pread, self._codec, self._rel = file_size, pread, codec, rel
        self._full_pickle = full_pickle  # a per-file policy: its allowed globals are one note
        self._allowed = ALLOWED_GLOBALS | frozenset(extra_allowed)
        self.tensors: tuple[TensorInfo, ...] = ()

    def feed(self, chunk: memoryview) -> None:
        """The stream is walked by offset in ``finish``: the hash pass needs nothing here."""

    def finish(self) -> list[Issue]:
        codec = None if self._codec == "none" else self._codec
        try:
            source = Source(self._pread, self._size, codec)
        except ImportError:
            return [
                Issue(
                    COMPRESSED_RANGE_UNSCANNED,
                    f"{codec}-compressed joblib file not scanned (safety, arrays, NaN/Inf): "
                    f"the {codec} module is not installed; its digest was checked",
                )
            ]
        named = self._rel.rsplit("/", 1)[-1].lower().endswith(_SUFFIXES)
        walk = _Walk(source, self._allowed, plain_readable=codec is None and not named)
        m = JoblibMachine(self._allowed)
        report = walk.pickle(m, JOBLIB_OPS)
        top = m.stack[-1:] if report.malformed is None and not report.capped else []
        names = {key: path for value in top for path, key in m.refs_of(value) if path}
        issues = pickle_issues(report, "joblib pickle", torch=False, full_pickle=self._full_pickle)
        if walk.dual is not None:
            issues.append(Issue(UNSAFE_PICKLE, walk.dual))
        for key, inner in walk.inner:
            issues += pickle_issues(inner, f"object array '{names.get(key, key)}'", torch=False)
        try:
            extra = source.trailing() if not issues else 0
        except (Damaged, Capped) as exc:  # after STOP: its checksum, or more than it holds
            extra = 0
            issues.append(Issue(PICKLE_MALFORMED, f"after the joblib stream: {exc}"))
        if source.cut_short:
            message = f"the {codec} stream ends before its end-of-stream marker (cut short)"
            issues.append(Issue(PICKLE_MALFORMED, message))
        elif extra:
            issues.append(
                Issue(
                    PICKLE_MALFORMED,
                    f"{extra} bytes after the end of the joblib stream (joblib.dump writes none)",
                )
            )
        found = [replace(nf, name=names.get(nf.name, nf.name)) for nf in walk.scanner.results()]
        issues += nonfinite_issues(found)
        big = [s for s in walk.arrays if s.big_endian and s.code.lstrip("<>=|")[:1] in "fc"]
        if big:
            what = f"array '{names.get(big[0].key, big[0].key)}'"
            issues.append(skipped_issue(what, "big-endian float data"))
        if any(s.scan for s in walk.arrays) and not walk.scanner.available:
            issues.append(skipped_issue("the float arrays", "numpy is not installed"))
        self.tensors = tuple(
            TensorInfo(names.get(s.key, s.key), s.code, s.nbytes) for s in walk.arrays
        )
        return issues

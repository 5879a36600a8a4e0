"""torch.save's zip format: central directory, per-record CRC32, data.pkl safety, NaN/Inf.

The central directory (a few KiB at the end of the file) is read first with bounded random
reads; then the single sequential pass checks every local header against it, CRC32s every
record incrementally (torch writes the CRCs but never checks them), buffers ``data.pkl``
(capped) to scan it, and feeds each floating storage to the NaN/Inf scanner.
"""

from __future__ import annotations

import functools
import importlib
import re
import struct
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from rentcheck.errors import FormatError
from rentcheck.pull.formats.base import Issue, PRead, TensorInfo
from rentcheck.pull.formats.finite import FiniteScanner, nonfinite_issues, skipped_issue
from rentcheck.pull.formats.pickle_safety import PickleReport, scan_pickle
from rentcheck.pull.formats.policy import accept_hint
from rentcheck.pull.formats.zipdir import (
    ZipAmbiguous,
    ZipLimit,
    ZipRecord,
    has_zip64_extra,
    parse_local_header,
    read_central_directory,
)
from rentcheck.pull.rules import (
    KNOWN_FULL_PICKLE,
    PICKLE_MALFORMED,
    TORCH_WILL_REFUSE,
    TORCH_ZIP_CORRUPT,
    TORCHSCRIPT_ARCHIVE,
    UNPROVEN_LOAD_SAFETY,
    UNSAFE_PICKLE,
    VERIFY_LIMIT_REACHED,
)

__all__ = ["ACCEPT_HINT", "MAX_PICKLE_BYTES", "TorchZipValidator", "crc32", "pickle_issues"]

#: How a refusal that proves nothing about intent is accepted on purpose (RC538's fix).
ACCEPT_HINT = (
    "not proved safe to load: re-save it with its writer, or accept it deliberately under "
    '[tool.rentcheck.verify.per-file-ignores] ("<path>" = ["RC538"])'
)

# A pickle is buffered whole (and copied once) to be scanned: 32 MiB keeps two workers' worth
# under the 300 MB target; data.pkl of an 80k-tensor state dict is about 10 MiB.
MAX_PICKLE_BYTES = 32 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def _crc32_function() -> Callable[[Any, int], int]:
    """zlib's CRC32, or ISA-L's when the optional ``isal`` package is installed: the same
    polynomial at about 3x the speed (10 GB/s against 3 GB/s here), which is the difference
    between the CRC check costing a third of SHA-256 and a tenth of it."""
    try:
        crc: Callable[[Any, int], int] = importlib.import_module("isal.isal_zlib").crc32
    except ImportError:
        return zlib.crc32
    return crc


def crc32(data: Any, value: int) -> int:
    """CRC32 of ``data`` continuing ``value``; the implementation is chosen at the first call,
    so importing this module costs no ``isal`` import (start-up stays under 100 ms)."""
    return _crc32_function()(data, value)


def pickle_issues(
    report: PickleReport, what: str, *, torch: bool = True, full_pickle: bool = False
) -> list[Issue]:
    """The issues of one analysed pickle: hostile (RC514), a work cap (RC533), damage (RC513);
    then, for a pickle ``torch.load`` reads (``torch``), what its weights_only unpickler would
    refuse (RC530), or the note for a known full pickle (RC534)."""
    issues = [
        Issue(UNSAFE_PICKLE, f"{what}: {_with_hint(u)}", {"globals": list(report.globals)})
        for u in report.unsafe
    ]
    if report.capped:
        issues.append(
            Issue(
                VERIFY_LIMIT_REACHED,
                f"{what}: {report.capped}; more than any real checkpoint needs, not proved safe",
            )
        )
    elif report.malformed:
        issues.append(Issue(PICKLE_MALFORMED, f"{what}: {report.malformed}"))
    if report.unsafe or report.capped or report.malformed:
        return issues
    if full_pickle:
        names = list(report.globals)
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        issues.append(
            Issue(
                KNOWN_FULL_PICKLE,
                f"{what}: a known full pickle (per-file policy) naming {shown or 'no globals'}; "
                "every one is on its per-file list",
                {"globals": names},
            )
        )
    elif torch and report.refused:
        proto = f" (a protocol-{report.protocol} pickle)" if (report.protocol or 2) > 2 else ""
        issues.append(
            Issue(
                TORCH_WILL_REFUSE,
                f"{what}: torch will refuse to load this with weights_only=True{proto}: "
                + "; ".join(report.refused[:3]),
                {"refused": list(report.refused[:50])},
            )
        )
    return issues


#: Records torch.save writes as a number (torch's reader parses two of them); a file format
#: version outside 1..10 torch 2.x refuses.
_NUMBER_RECORDS = ("version", ".data/version", ".format_version", ".storage_alignment")


def _number(name: str, text: bytes) -> bool:
    digits = text.removesuffix(b"\n")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 6):
        return False
    return 1 <= int(digits) <= 10 if name in ("version", ".data/version") else True


_NOT_LISTED = re.compile(r"global '([^']+)' is not on the state-dict allow-list")


def _with_hint(message: str) -> str:
    """A refusal of one global, with the preset or ``--allow-global`` that would accept it."""
    found = _NOT_LISTED.fullmatch(message)
    return f"{message} ({accept_hint(found.group(1))})" if found else message


class TorchZipValidator:
    def __init__(
        self,
        file_size: int,
        pread: PRead,
        *,
        extra_allowed: Iterable[str] = (),
        full_pickle: bool = False,
        torchscript: bool = False,
    ) -> None:
        self._size = file_size
        self._pread = pread
        self._allowed = tuple(extra_allowed)
        self._full_pickle = full_pickle
        self._torchscript = torchscript
        self._issues: list[Issue] = []
        if torchscript:
            self._issues.append(
                Issue(
                    TORCHSCRIPT_ARCHIVE,
                    "TorchScript: weights_only refuses it (torch.load hands it to "
                    "torch.jit.load, which runs the archive's code); records and CRCs checked",
                )
            )
        self._scanner = FiniteScanner()
        self._pos = 0
        self._records: list[ZipRecord] = []
        self._cd_off = 0
        try:
            self._records, self._cd_off = read_central_directory(pread, file_size)
        except ZipLimit as exc:
            self._issues.append(Issue(VERIFY_LIMIT_REACHED, f"{exc.message}; not proved safe"))
            self._records = []
        except ZipAmbiguous as exc:
            self._issues.append(Issue(UNPROVEN_LOAD_SAFETY, f"{exc.message}; {ACCEPT_HINT}"))
            self._records = []
        except (FormatError, struct.error) as exc:
            msg = exc.message if isinstance(exc, FormatError) else "central directory is damaged"
            self._corrupt(msg)
            self._records = []
        if len({r.name.casefold() for r in self._records}) != len(self._records):
            # (an .npz may hold 'a.npy' and 'A.npy': numpy's zipfile lookup is exact)
            self._issues.append(
                Issue(
                    UNPROVEN_LOAD_SAFETY,
                    "two records' names differ only by case: torch's reader matches names "
                    f"case-insensitively, so the one it reads may not be the one checked; "
                    f"{ACCEPT_HINT}",
                )
            )
            self._records = []
        self._prefix = self._common_prefix()
        self._index = 0  # record being streamed
        self._phase = "gap"  # gap | head | data | desc | done
        self._buf = bytearray()
        self._need = 0
        self._crc = 0
        self._data_end = 0
        self._pickle: bytearray | None = None
        self._report: PickleReport | None = None
        self._big_endian = False
        self._byteorder: bytearray | None = None
        self._seen: dict[str, int] = {}  # record name -> computed CRC32
        self._start_of: dict[str, int] = {}
        self._floats = False
        self._early: list[str] = []  # storage keys streamed before data.pkl was analysed
        self._flags = 0
        self._local_zip64 = False
        self._inflate: Any = None  # zlib decompressor of a deflated TorchScript record
        self._inflated = 0

    def _corrupt(self, message: str) -> None:
        self._issues.append(Issue(TORCH_ZIP_CORRUPT, message))

    def _common_prefix(self) -> str:
        if not self._records:
            return ""
        prefix = self._records[0].name.split("/", 1)[0] + "/"
        if not all(r.name.startswith(prefix) for r in self._records):
            self._corrupt("records do not share one top-level folder (not a torch.save archive)")
        if not self._torchscript and not any(r.name == prefix + "data.pkl" for r in self._records):
            self._corrupt(f"no {prefix}data.pkl record (not a torch.save archive)")
        return prefix

    @property
    def tensor_paths(self) -> frozenset[str]:
        """The dotted path of every tensor in data.pkl's object (tied weights each count)."""
        return self._report.tensor_paths if self._report is not None else frozenset()

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        if self._report is None:
            return ()
        return tuple(
            TensorInfo(s.tensor or s.key, s.storage_type, s.numel * s.itemsize)
            for s in self._report.storages.values()
        )

    # -- streaming ------------------------------------------------------------------------
    def feed(self, chunk: memoryview) -> None:
        start = self._pos
        view, end = chunk, start + len(chunk)
        while self._pos < end and self._phase != "done" and self._records:
            view = chunk[self._pos - start :]
            self._step(view)
        self._pos = end
        self._scanner.feed(chunk)

    def _step(self, view: memoryview) -> None:
        rec = self._records[self._index] if self._index < len(self._records) else None
        if self._phase == "gap":
            target = rec.header_offset if rec else self._cd_off
            if self._pos != target:
                kind = "gap" if self._pos < target else "overlap"
                self._corrupt(f"{kind} of {abs(target - self._pos)} bytes before byte {target}")
                self._phase = "done"
                return
            if rec is None:
                self._phase = "done"
                return
            self._phase, self._need = "head", 30
        elif self._phase in ("head", "desc"):
            take = bytes(view[: self._need - len(self._buf)])
            self._buf += take
            self._pos += len(take)
            if len(self._buf) == self._need and rec is not None:
                if self._phase == "head":
                    self._header(rec)
                else:
                    self._descriptor(rec)
        elif self._phase == "data" and rec is not None:
            piece = view[: self._data_end - self._pos]
            if self._inflate is not None:  # a TorchScript code record: CRC of what it holds
                room = rec.usize - self._inflated + 1
                try:
                    out = self._inflate.decompress(piece, room) if room > 0 else b""
                except zlib.error as exc:
                    self._corrupt(f"record {rec.name!r} does not inflate: {exc}")
                    out, self._inflated = b"", -(1 << 62)
                self._inflated += len(out)
                self._crc = crc32(out, self._crc)
            else:
                self._crc = crc32(piece, self._crc)
            if self._pickle is not None and len(self._pickle) < MAX_PICKLE_BYTES:
                self._pickle += piece[: MAX_PICKLE_BYTES - len(self._pickle)]
            if self._byteorder is not None and len(self._byteorder) < 16:
                self._byteorder += piece[:16]
            self._pos += len(piece)
            if self._pos == self._data_end:
                self._end_data(rec)

    def _header(self, rec: ZipRecord) -> None:
        try:
            flags, method, _, name_len, extra_len = parse_local_header(bytes(self._buf))
        except FormatError as exc:
            self._corrupt(f"record {rec.name!r}: {exc.message}")
            self._phase = "done"
            return
        if self._need != 30 + name_len + extra_len:
            self._need = 30 + name_len + extra_len
            after = self._records[self._index + 1] if self._index + 1 < len(self._records) else None
            room = (after.header_offset if after else self._cd_off) - rec.header_offset
            if self._need + rec.csize > room:  # miniz refuses it; we would read past it
                self._corrupt(f"record {rec.name!r}: its local header runs into the next record")
                self._phase = "done"
            return
        name = bytes(self._buf[30 : 30 + name_len])
        self._local_zip64 = has_zip64_extra(bytes(self._buf[30 + name_len :]))
        if (flags | rec.flags) & 0x41:  # miniz: "unsupported encryption"
            self._corrupt(f"record {rec.name!r} is marked encrypted (torch cannot read it)")
        if rec.directory:  # torch.save never writes one; miniz extracts nothing from it
            self._corrupt(
                f"record {rec.name!r} is marked as a directory: torch's zip reader (miniz) "
                "reads it as empty, Python's zipfile reads its bytes"
            )
        if name.decode("utf-8", "replace") != rec.name and name.decode("cp437") != rec.name:
            self._corrupt(f"local header at {rec.header_offset} names {name!r}, not {rec.name!r}")
        deflated = self._torchscript and method == rec.method == 8  # jit.save deflates code
        stored = method == rec.method == 0 and rec.csize == rec.usize
        self._inflate = zlib.decompressobj(-15) if deflated else None
        self._inflated = 0
        if not (stored or deflated):
            self._corrupt(f"record {rec.name!r} is compressed (torch.save writes stored records)")
            self._phase = "done"
            return
        self._buf = bytearray()
        self._crc = 0
        self._start_of[rec.name] = self._pos
        self._data_end = self._pos + rec.csize
        wanted = rec.name == self._prefix + "data.pkl" and not self._torchscript
        self._pickle = bytearray() if wanted else None
        self._byteorder = bytearray() if rec.name == self._prefix + "byteorder" else None
        self._add_span(rec)
        self._flags = flags
        self._phase = "data"
        if rec.csize == 0:
            self._end_data(rec)

    def _add_span(self, rec: ZipRecord) -> None:
        if not rec.name.startswith(self._prefix + "data/"):
            return
        if self._report is None:  # storages before data.pkl: torch never writes that order
            self._early.append(rec.name[len(self._prefix) + 5 :])
            return
        ref = self._report.storages.get(rec.name[len(self._prefix) + 5 :])
        if ref is None or ref.scan_dtype is None:
            return
        self._floats = True
        if not self._big_endian:
            name = ref.tensor or f"storage {ref.key}"
            # only the bytes some tensor's view covers are values (torch.save(t[:2]) writes
            # t's whole storage); a storage read other than through views is scanned whole
            for start, stop in self._report.views.get(ref.key, ((0, rec.csize),)):
                end = min(stop, rec.csize)
                if start < end:
                    self._scanner.add_span(self._pos + start, self._pos + end, name, ref.scan_dtype)

    def _end_data(self, rec: ZipRecord) -> None:
        self._seen[rec.name] = self._crc
        if self._inflate is not None and self._inflated != rec.usize:
            self._corrupt(
                f"record {rec.name!r} inflates to {self._inflated}, not {rec.usize} bytes"
            )
        self._inflate = None
        if self._pickle is not None:
            self._scan_pickle(rec)
        if self._byteorder is not None:
            order = bytes(self._byteorder)
            self._big_endian = order == b"big"
            if order not in (b"little", b"big"):  # torch raises "Unknown endianness type"
                self._corrupt(f"byteorder record holds {order[:16]!r}, not 'little' or 'big'")
        self._pickle = self._byteorder = None
        if self._flags & 0x08:
            self._phase, self._need = "desc", 4
        else:
            self._phase = "gap"
            self._index += 1

    def _descriptor(self, rec: ZipRecord) -> None:
        sizes = 16 if self._local_zip64 else 8
        if self._need == 4:
            self._need = (4 if bytes(self._buf[:4]) == b"PK\x07\x08" else 0) + 4 + sizes
            if self._need > 4:
                return
        body = bytes(self._buf[4:] if self._need == 8 + sizes else self._buf)
        crc = int.from_bytes(body[:4], "little")
        csize = int.from_bytes(body[4 : 4 + sizes // 2], "little")
        if crc != rec.crc or csize != rec.csize:
            self._corrupt(f"record {rec.name!r}: data descriptor disagrees with the directory")
        self._buf = bytearray()
        self._phase = "gap"
        self._index += 1

    def _scan_pickle(self, rec: ZipRecord) -> None:
        if self._pickle is None:  # pragma: no cover - only called for data.pkl
            return
        if rec.csize > MAX_PICKLE_BYTES:
            self._issues.append(
                Issue(
                    VERIFY_LIMIT_REACHED,
                    f"{rec.name} is {rec.csize} bytes, more "
                    f"than the {MAX_PICKLE_BYTES}-byte scan limit; not proved safe",
                )
            )
            return
        self._report = scan_pickle(bytes(self._pickle), extra_allowed=self._allowed)
        self._issues += pickle_issues(self._report, rec.name, full_pickle=self._full_pickle)
        if self._report.persid_sizes - {5} and not self._report.unsafe:
            self._issues.append(
                Issue(
                    TORCH_WILL_REFUSE,
                    f"{rec.name}: torch will refuse to load this with weights_only=True: a "
                    "storage reference without the five items torch unpacks",
                )
            )
        if not self._report.malformed and self._report.end != rec.csize:
            self._issues.append(
                Issue(
                    PICKLE_MALFORMED, f"{rec.name}: {rec.csize - self._report.end} bytes after STOP"
                )
            )

    # -- verdict ------------------------------------------------------------------------
    def finish(self) -> list[Issue]:
        issues = list(self._issues)
        if self._records and self._phase != "done" and self._pos < self._cd_off:
            issues.append(
                Issue(
                    TORCH_ZIP_CORRUPT,
                    f"file ends at byte {self._pos}, inside "
                    f"record data that runs to {self._cd_off}",
                )
            )
        for rec in self._records:
            crc = self._seen.get(rec.name)
            if crc is not None and crc != rec.crc:
                issues.append(
                    Issue(
                        TORCH_ZIP_CORRUPT,
                        f"record {rec.name!r}: CRC32 {crc:#010x} != {rec.crc:#010x} "
                        "in the central directory",
                        {"record": rec.name, "crc": crc, "expected": rec.crc},
                    )
                )
        issues += self._storage_issues()
        issues += self._record_shape_issues()
        if self._report is not None:
            issues += nonfinite_issues(self._scanner.results())
            if self._floats and not self._scanner.available:
                issues.append(skipped_issue("floating storages", "numpy is not installed"))
            elif self._floats and self._big_endian:
                issues.append(skipped_issue("floating storages", "the archive is big-endian"))
            early = [k for k in self._early if self._report.storages.get(k, None) is not None]
            if any(self._report.storages[k].scan_dtype for k in early):
                issues.append(skipped_issue(f"{len(early)} storages", "they precede data.pkl"))
        return issues

    def _record_shape_issues(self) -> list[Issue]:
        """Records torch.save never writes that a loader would still read: a record beginning
        with the ``.npy`` magic (np.load opens any zip and reads such a member as an array, an
        object array being a pickle), a small text record (``version``,
        ``.data/serialization_id``...) that is not ASCII (torch decodes it and fails)."""
        issues = []
        for rec in self._records:
            start = self._start_of.get(rec.name)
            if start is None:
                continue
            text = (
                not self._torchscript  # TorchScript's code records are deflated: magic only
                and not rec.name.startswith(self._prefix + "data/")
                and rec.name != self._prefix + "data.pkl"
            )
            if rec.method == 8:  # a deflated (TorchScript) record: its first inflated bytes
                try:
                    raw = self._pread(start, min(rec.csize, 4096))
                    head = zlib.decompressobj(-15).decompress(raw, 6)
                except zlib.error:
                    head = b""
            else:
                head = self._pread(start, min(rec.usize, 256 if text else 6))
            if head.startswith(b"\x93NUMPY"):
                issues.append(
                    Issue(
                        UNPROVEN_LOAD_SAFETY,
                        f"record {rec.name!r} begins with the .npy magic: np.load would read "
                        f"it as an array, which torch.save never writes; {ACCEPT_HINT}",
                    )
                )
            elif text and (rec.usize > 256 or not head.isascii()):
                issues.append(
                    Issue(
                        TORCH_ZIP_CORRUPT,
                        f"record {rec.name!r} is not the short ASCII text torch.save writes "
                        "there (torch decodes it when loading)",
                    )
                )
            elif (short := rec.name[len(self._prefix) :]) in _NUMBER_RECORDS and not _number(
                short, head
            ):
                issues.append(
                    Issue(
                        TORCH_ZIP_CORRUPT,
                        f"record {rec.name!r} holds {head[:20]!r}, not the number torch.save "
                        "writes there (torch parses it when loading)",
                    )
                )
        names = {rec.name[len(self._prefix) :] for rec in self._records}
        if self._records and not self._torchscript and "version" not in names:
            issues.append(Issue(TORCH_ZIP_CORRUPT, "no version record (torch refuses the file)"))
        return issues

    def _storage_issues(self) -> list[Issue]:
        if self._report is None or self._report.malformed:
            return []
        sizes = {r.name: r.usize for r in self._records}
        issues = []
        for key, ref in self._report.storages.items():
            name = f"{self._prefix}data/{key}"
            want = ref.numel * ref.itemsize
            if name not in sizes:
                issues.append(Issue(TORCH_ZIP_CORRUPT, f"storage record {name!r} is missing"))
            elif sizes[name] != want:
                issues.append(
                    Issue(
                        TORCH_ZIP_CORRUPT,
                        f"storage record {name!r} holds "
                        f"{sizes[name]} bytes, data.pkl declares {want}",
                    )
                )
        for key in self._report.bad_views:
            ref = self._report.storages[key]
            issues.append(
                Issue(
                    TORCH_ZIP_CORRUPT,
                    f"tensor {ref.tensor or key!r} reaches past the end of its storage",
                )
            )
        return issues

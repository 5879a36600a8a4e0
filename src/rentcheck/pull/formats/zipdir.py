"""The zip central directory (ZIP64 aware), read with a few bounded random reads at the end."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

from rentcheck.errors import FormatError
from rentcheck.pull.formats.base import PRead

__all__ = [
    "MAX_CD_BYTES",
    "MAX_ZIP_ENTRIES",
    "ZipAmbiguous",
    "ZipLimit",
    "ZipRecord",
    "has_zip64_extra",
    "parse_local_header",
    "read_central_directory",
    "zip_member_names",
]

MAX_CD_BYTES = 64 * 1024 * 1024
MAX_ZIP_ENTRIES = 300_000  # torch.save writes one record per storage, plus five


class ZipLimit(FormatError):
    """The archive is consistent but larger than any checkpoint: a cap, not damage."""


class ZipAmbiguous(FormatError):
    """Readers may disagree on what the archive holds (data before the directory, names equal
    but for case): not damage a writer makes, and not provably what the loader reads."""


_EOCD = struct.Struct("<4sHHHHIIH")  # 22 bytes
_LOC64 = struct.Struct("<4sIQI")  # 20 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # 56 bytes
_CDH = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
_LFH = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_FFFF, _FFFFFFFF = 0xFFFF, 0xFFFFFFFF


@dataclass(frozen=True)
class ZipRecord:
    name: str
    header_offset: int
    csize: int
    usize: int
    crc: int
    method: int
    flags: int
    zip64: bool
    #: miniz calls it a directory (a name ending in '/', or the DOS directory attribute) and
    #: extracts nothing from it, whatever its sizes say; Python's zipfile reads its bytes
    directory: bool = False


def _zip64_extra(extra: bytes, wanted: list[str]) -> dict[str, int]:
    """Values of the ZIP64 extra field (id 1): only the fields whose 32-bit slot overflowed."""
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4 : i + 4 + size]
        if tag == 1:
            if len(body) < 8 * len(wanted):
                raise FormatError("ZIP64 extra field is shorter than the sizes it must hold")
            return {w: struct.unpack_from("<Q", body, 8 * k)[0] for k, w in enumerate(wanted)}
        i += 4 + size
    if wanted:
        raise FormatError("sizes overflow 32 bits but there is no ZIP64 extra field")
    return {}


def has_zip64_extra(extra: bytes) -> bool:
    """Whether a local header's extra field holds a ZIP64 record (then descriptors use u64)."""
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        if tag == 1:
            return True
        i += 4 + size
    return False


def _decode(raw: bytes, flags: int) -> str:
    return raw.decode("utf-8", "replace") if flags & 0x800 else raw.decode("cp437")


def _find_eocd(pread: PRead, size: int) -> tuple[int, tuple[int, ...]]:
    """The end-of-central-directory record torch's reader (miniz) uses: the last signature in
    the final 64 KiB with a whole record after it, whatever its comment length says. A
    "better" choice (the one whose comment reaches the end) would read a different directory
    than torch does when a crafted comment holds a second record."""
    span = min(size, _EOCD.size + 0xFFFF)
    tail = pread(size - span, span)
    i = len(tail) - _EOCD.size + 4
    while True:
        i = tail.rfind(b"PK\x05\x06", 0, i)
        if i < 0:
            raise FormatError("no end-of-central-directory record (file truncated or not a zip)")
        if i + _EOCD.size <= len(tail):
            return size - span + i, _EOCD.unpack_from(tail, i)


def read_central_directory(pread: PRead, size: int) -> tuple[list[ZipRecord], int]:
    """Records sorted by local-header offset, and the offset where the central directory starts."""
    if size < _EOCD.size:
        raise FormatError(f"file is {size} bytes, too short to be a zip")
    eocd_at, (_, disk, cd_disk, n_disk, n, cd_size, cd_off, _) = _find_eocd(pread, size)
    end_of_cd = eocd_at
    if (
        _FFFF in (n, n_disk)
        or _FFFFFFFF in (cd_size, cd_off)
        or (eocd_at >= _LOC64.size and pread(eocd_at - _LOC64.size, 4) == b"PK\x06\x07")
    ):
        if eocd_at < _LOC64.size:
            raise FormatError("ZIP64 locator missing before the end-of-central-directory record")
        sig, z64_disk, z64_at, disks = _LOC64.unpack(pread(eocd_at - _LOC64.size, _LOC64.size))
        if sig != b"PK\x06\x07" or z64_at + _EOCD64.size > eocd_at - _LOC64.size:
            raise FormatError("ZIP64 end-of-central-directory locator is damaged")
        if z64_disk != 0 or disks > 1:  # miniz: "unsupported multidisk archive"
            raise FormatError(f"the ZIP64 locator counts {disks} disks (a multi-disk archive)")
        rec = _EOCD64.unpack(pread(z64_at, _EOCD64.size))
        if rec[0] != b"PK\x06\x06":
            raise FormatError("ZIP64 end-of-central-directory record is damaged")
        if rec[1] != _EOCD64.size - 12:  # miniz refuses a shorter record; no writer adds more
            raise FormatError(f"the ZIP64 end record declares {rec[1]} bytes, not 44")
        disk, cd_disk, n_disk, n, cd_size, cd_off = rec[4], rec[5], rec[6], rec[7], rec[8], rec[9]
        if z64_at + _EOCD64.size + _LOC64.size != eocd_at:
            raise ZipAmbiguous(
                "the ZIP64 end record does not sit right before its locator: zipfile would "
                "shift every offset by the difference, torch would not"
            )
        end_of_cd = z64_at
    if disk or cd_disk or n != n_disk:
        raise FormatError("multi-disk zip archives are not supported")
    if cd_off + cd_size > end_of_cd:  # miniz reads a directory that ends before the record
        raise FormatError(
            f"central directory claims bytes {cd_off}..{cd_off + cd_size} but ends at {end_of_cd}"
        )
    if cd_off + cd_size != end_of_cd:
        # Python's zipfile shifts every offset by the gap ("data prepended"), miniz does not:
        # the two would read different members. No writer leaves a gap.
        raise ZipAmbiguous(
            f"{end_of_cd - cd_off - cd_size} bytes lie between the central directory and its "
            "end record (data prepended to the archive?): zipfile and torch would read "
            "different members"
        )
    if n * _CDH.size > cd_size or cd_off + cd_size > size:
        raise FormatError(f"central directory of {cd_size} bytes for {n} entries is implausible")
    if cd_size > MAX_CD_BYTES or n > MAX_ZIP_ENTRIES:
        raise ZipLimit(
            f"central directory of {n} entries ({cd_size} bytes): more than the "
            f"{MAX_ZIP_ENTRIES} entries / {MAX_CD_BYTES} bytes any checkpoint needs"
        )
    return _parse_entries(pread(cd_off, cd_size), n, cd_off), cd_off


def _parse_entries(cd: bytes, n: int, cd_off: int) -> list[ZipRecord]:
    records: list[ZipRecord] = []
    i = 0
    for k in range(n):
        if i + _CDH.size > len(cd):
            raise FormatError(f"central directory ends inside entry {k}")
        f = _CDH.unpack_from(cd, i)
        if f[0] != b"PK\x01\x02":
            raise FormatError(f"central directory entry {k} has a bad signature")
        flags, method, crc, csize, usize = f[3], f[4], f[7], f[8], f[9]
        name_len, extra_len, comment_len, disk, offset = f[10], f[11], f[12], f[13], f[16]
        body = cd[i + _CDH.size : i + _CDH.size + name_len + extra_len]
        if len(body) < name_len + extra_len:
            raise FormatError(f"central directory ends inside entry {k}")
        wanted = [w for w, v in (("u", usize), ("c", csize), ("o", offset)) if v == _FFFFFFFF]
        if disk == _FFFF:
            wanted.append("d")
        if flags & 0x2061:  # encrypted, strong encryption, masked headers, a patch: miniz
            raise FormatError(f"entry {k} is marked encrypted or patched (flags {flags:#06x})")
        if disk not in (0, 1):  # miniz: "unsupported multidisk archive" (0xFFFF included)
            raise FormatError(f"entry {k} starts on disk {disk} (a multi-disk archive)")
        z64 = _zip64_extra(body[name_len:], wanted)
        usize, csize, offset = z64.get("u", usize), z64.get("c", csize), z64.get("o", offset)
        if offset >= cd_off:
            raise FormatError(f"entry {k} points past the start of the central directory")
        name = _decode(body[:name_len], flags)
        directory = body[name_len - 1 : name_len] == b"/" or bool(f[15] & 0x10)
        records.append(
            ZipRecord(name, offset, csize, usize, crc, method, flags, bool(wanted), directory)
        )
        i += _CDH.size + name_len + extra_len + comment_len
    if i != len(cd):
        raise FormatError(f"{len(cd) - i} unexplained bytes at the end of the central directory")
    records.sort(key=lambda r: r.header_offset)
    for a, b in itertools.pairwise(records):
        if a.header_offset + 30 + a.csize > b.header_offset:
            raise FormatError(f"records {a.name!r} and {b.name!r} overlap")
    if len({r.name for r in records}) != len(records):
        raise FormatError("two records share a name")
    return records


def parse_local_header(head: bytes) -> tuple[int, int, int, int, int]:
    """(flags, method, crc, name length, extra length) of a 30-byte local file header."""
    f = _LFH.unpack(head[: _LFH.size])
    if f[0] != b"PK\x03\x04":
        raise FormatError("local file header signature missing")
    return f[2], f[3], f[6], f[9], f[10]


def zip_member_names(pread: PRead, size: int) -> list[str] | None:
    """The record names of a zip, or None when its central directory cannot be read."""
    try:
        records, _ = read_central_directory(pread, size)
    except (FormatError, struct.error):
        return None
    return [r.name for r in records]

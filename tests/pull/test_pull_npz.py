"""numpy .npz archives: every .npy member is checked as an .npy (length, NaN/Inf, object
arrays as pickles), stored or deflated; a damaged member and a zip bomb are caught."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np

from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import VerifyPolicy


class _Evil:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("true",))


def _codes(path: Path, **kw: object) -> list[str]:
    verdict, findings = verify_file(path, **kw)  # type: ignore[arg-type]
    assert verdict.kind == "npz", verdict.kind
    return sorted({f.code for f in findings})


def test_plain_and_compressed_archives_pass_and_a_nan_member_fails(tmp_path: Path) -> None:
    np.savez(tmp_path / "ok.npz", w=np.ones((3, 4), np.float32), step=np.arange(3))
    np.savez_compressed(tmp_path / "small.npz", w=np.ones(1000))
    assert _codes(tmp_path / "ok.npz") == [] and _codes(tmp_path / "small.npz") == []
    verdict, _ = verify_file(tmp_path / "ok.npz")
    assert verdict.tensors == 2  # both members seen
    nan = np.ones(5)
    nan[1] = np.inf
    np.savez_compressed(tmp_path / "nan.npz", good=np.ones(2), bad=nan)
    _, findings = verify_file(tmp_path / "nan.npz")
    assert [f.code for f in findings] == ["RC516"] and "bad.npy" in findings[0].message
    # Before this kind existed an .npz was only hashed: the NaN passed.


def test_object_array_members_are_pickles(tmp_path: Path) -> None:
    np.savez(tmp_path / "evil.npz", x=np.array([_Evil()], dtype=object))
    numpy_ok = VerifyPolicy.build(presets=["numpy-rng"])
    assert _codes(tmp_path / "evil.npz", policy=numpy_ok) == ["RC514"]
    _, findings = verify_file(tmp_path / "evil.npz", policy=numpy_ok)
    assert any("posix.system" in f.message and "x.npy" in f.message for f in findings)
    np.savez(tmp_path / "plain.npz", x=np.array([{"a": 1}], dtype=object))
    assert _codes(tmp_path / "plain.npz", policy=numpy_ok) == []


def test_a_flipped_byte_in_a_member_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    np.savez(path, x=np.arange(100, dtype=np.float64))
    data = bytearray(path.read_bytes())
    data[300] ^= 0xFF  # inside the stored member's array bytes
    path.write_bytes(data)
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC513"]
    assert "CRC-32 does not match" in findings[0].message


def test_a_member_that_inflates_past_its_declared_size_stops_there(tmp_path: Path) -> None:
    """A hand-made zip (zipfile would write the true size): 64 MiB inflated, 136 declared."""
    path = tmp_path / "bomb.npz"
    header = b"\x93NUMPY\x01\x00" + struct.pack("<H", 118)
    header += b"{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }".ljust(117) + b"\n"
    member = header + b"\0" * (64 << 20)  # 64 MiB of zeros: deflates to about 64 KiB
    compressed = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = compressed.compress(member) + compressed.flush()
    name = b"x.npy"
    local = struct.pack(
        "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, zlib.crc32(member), len(raw), 136,
        len(name), 0,
    ) + name  # fmt: skip
    central = struct.pack(
        "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, zlib.crc32(member),
        len(raw), 136, len(name), 0, 0, 0, 0, 0, 0,
    ) + name  # fmt: skip
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(raw), 0
    )
    path.write_bytes(local + raw + central + end)
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC513"]
    assert "inflates past the 136 bytes it declares" in findings[0].message

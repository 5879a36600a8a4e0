"""Bounded memory: hostile length fields allocate nothing; big files stay under 300 MB RSS."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from pullkit import codes, validate_bytes

from rentcheck.pull.formats.pickle_safety import scan_pickle

LIMIT = 1 << 20  # 1 MiB of Python allocations for any of these inputs


def peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("length", [2**63 - 1, 2**63 + 12345, 2**40, 99_000_000, 2**64 - 1])
def test_hostile_safetensors_header_length(length: int) -> None:
    blob = struct.pack("<Q", length) + b"{}" + bytes(1000)
    assert peak(lambda: validate_bytes("x.safetensors", blob)) < LIMIT
    assert codes(validate_bytes("x.safetensors", blob)) == {"RC511"}


@pytest.mark.parametrize("blob", [
    b"\x80\x04\x8e" + (2**62).to_bytes(8, "little") + b"x",  # BINBYTES8
    b"\x80\x04\x8d" + (2**62).to_bytes(8, "little") + b"x",  # BINUNICODE8
    b"\x80\x02\x8b" + (2**31 - 1).to_bytes(4, "little") + b"x",  # LONG4
    b"\x80\x02X" + (2**32 - 1).to_bytes(4, "little") + b"x",  # BINUNICODE
    b"\x80\x02r" + (2**32 - 1).to_bytes(4, "little") + b".",  # LONG_BINPUT of nothing
    b"\x80\x05\x96" + (2**63).to_bytes(8, "little"),  # BYTEARRAY8
])  # fmt: skip
def test_hostile_pickle_lengths(blob: bytes) -> None:
    assert peak(lambda: scan_pickle(blob)) < LIMIT
    assert scan_pickle(blob).malformed


def test_hostile_zip_directory_sizes() -> None:
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFE, 0xFFFE, 0xFFFFFFF0, 16, 0)
    blob = b"PK\x03\x04" + bytes(100) + eocd
    assert peak(lambda: validate_bytes("x.pt", blob)) < LIMIT
    assert codes(validate_bytes("x.pt", blob)) == {"RC512"}
    z64 = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, 2**40, 2**40, 2**62, 0)
    loc = struct.pack("<4sIQI", b"PK\x06\x07", 0, 104, 1)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 2**32 - 1, 2**32 - 1, 0)
    blob = b"PK\x03\x04" + bytes(100) + z64 + loc + end
    assert peak(lambda: validate_bytes("x.pt", blob)) < LIMIT
    assert codes(validate_bytes("x.pt", blob)) == {"RC512"}


def test_peak_rss_stays_flat_on_big_files(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    numel = 100_000_000  # 400 MB of float32 zeros, a sparse file
    header = json.dumps({"w": {"dtype": "F32", "shape": [numel], "data_offsets": [0, 4 * numel]}})
    raw = header.encode() + b" " * (-len(header) % 8)
    with open(root / "big.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + 4 * numel)
    torch.save({"w": torch.zeros(80_000_000)}, root / "big.pt")  # 320 MB torch zip
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / "src")!r})
        from rentcheck.pull.verify import verify_tree
        result = verify_tree({str(root)!r}, None, jobs=2)
        assert result.findings == (), result.findings
        assert result.bytes_read > 700_000_000
        # VmHWM is this process's own peak (ru_maxrss would carry the parent's across exec)
        status = open("/proc/self/status").read()
        print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    peak_mib = int(proc.stdout.split()[-1]) / 1024
    assert peak_mib < 300, peak_mib

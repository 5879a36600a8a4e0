"""Work caps: each is a clear RC533 finding (hostile, not "re-pull"), and peak RSS stays under
300 MB on the inputs built to exhaust a scanner."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats import zipdir


def _codes(path: Path) -> set[str]:
    return {f.code for f in verify_file(path)[1]}


def test_zip_entry_cap_is_a_limit_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.pt"
    torch.save({f"t{i}": torch.ones(1) for i in range(8)}, path)
    assert _codes(path) == set()
    monkeypatch.setattr(zipdir, "MAX_ZIP_ENTRIES", 5)
    assert _codes(path) == {"RC533"}


def test_millions_of_tiny_pickles_are_capped(tmp_path: Path) -> None:
    path = tmp_path / "tiny.pkl"
    path.write_bytes(b"N." * 2_000_000)
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC533"]
    assert "pickles" in findings[0].message


def test_deep_stack_is_a_limit_not_damage(tmp_path: Path) -> None:
    path = tmp_path / "deep.pkl"
    path.write_bytes(b"\x80\x02" + b"K\x01" * 150_000 + b".")
    assert _codes(path) == {"RC533"}


HOSTILE_INPUTS = {
    "tiny.pkl": b"N." * 30_000_000,  # 60 MB of one-byte pickles
    # one storage in a list, a TUPLE of 99k references to the list, a TUPLE of 99k references
    # to that tuple: 10^10 (path, storage) pairs if each were copied
    "refs.pkl": b"\x80\x02]q\x00(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
    b"0X\x03\x00\x00\x00cpuK\x01tQa(" + b"h\x00" * 99_000 + b"tq\x01(" + b"h\x01" * 99_000 + b"t.",
    "memo.pkl": b"\x80\x02N"
    + b"".join(b"r" + i.to_bytes(4, "little") for i in range(900_000))
    + b".",
}


def test_peak_rss_under_300_mb_on_hostile_inputs(tmp_path: Path) -> None:
    for name, data in HOSTILE_INPUTS.items():
        (tmp_path / name).write_bytes(data)
    code = textwrap.dedent(f"""
        from rentcheck.pull.verify import verify_tree
        result = verify_tree({str(tmp_path)!r}, None)
        assert {{f.path: f.code for f in result.findings}} == {{"tiny.pkl": "RC533"}}
        # VmHWM: this process image's peak (ru_maxrss would count the forking parent's)
        status = open("/proc/self/status").read()
        print(int(status.split("VmHWM:")[1].split()[0]) // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) < 300, out.stdout


def test_time_cap_is_a_limit_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rentcheck.pull.formats import pickle_safety

    path = tmp_path / "slow.pkl"
    path.write_bytes(b"\x80\x02]" + b"K\x01a" * 5000 + b".")
    assert _codes(path) == set()
    monkeypatch.setattr(pickle_safety, "MAX_SCAN_SECONDS", 0.0)
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC533"] and "took more than" in findings[0].message

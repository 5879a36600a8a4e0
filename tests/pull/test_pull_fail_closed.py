"""Fail closed, by loader: a file its loader would unpickle is never passed as "data".

Each hostile file is built the way the published scanner bypasses are, from real writers'
output (np.save/np.savez/torch.save/tarfile); the oracle is the real loader in a throwaway
process beside a canary (``oracle.py``). Every hostile case asserts both halves: the loader
really runs the payload, and verify refuses the file. The benign twins must still pass.
"""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from oracle import exec_pickle, ran_payload

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def _errors(path: Path) -> set[str]:
    _, findings = verify_file(path)
    return {f.code for f in findings if f.severity >= Severity.ERROR}


def _messages(path: Path) -> str:
    return "\n".join(f.message for f in verify_file(path)[1])


def _object_npy() -> bytes:
    """An .npy of an object array whose one element runs the payload (np.save writes the
    header, the hostile pickle replaces the array's own)."""
    buf = io.BytesIO()
    np.save(buf, np.array([1, None], dtype=object), allow_pickle=True)
    data = buf.getvalue()
    header_end = data.index(b"\n") + 1
    return data[:header_end] + exec_pickle()


def _npz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


# -- np.load's pickle fallback: a file without the .npy or zip magic is unpickled -----------


@pytest.mark.parametrize(
    "data",
    [
        exec_pickle(0) + b"trailing bytes np.load ignores",  # protocol 0, not ending at STOP
        b"K\x010" + exec_pickle(0),  # first opcode not one a pickle usually starts with
        b"X\x00\x04\x00\x00" + b"a" * 1024 + b"0" + exec_pickle(0),  # first op longer than head
        exec_pickle(4),
    ],
    ids=["proto0-trailing", "odd-first-opcode", "long-first-opcode", "proto4"],
)
@pytest.mark.parametrize("suffix", [".npy", ".npz", ".bin", ".joblib"])
def test_a_pickle_under_a_loader_name_is_refused(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"weights{suffix}"
    path.write_bytes(data)
    loader = "numpy" if suffix in (".npy", ".npz") else "pickle"
    assert ran_payload(path, loader), "the oracle must run this payload"
    assert _errors(path) & {"RC514", "RC538"}, verify_file(path)[1]


def test_random_bytes_under_a_loader_name_that_pickle_cannot_start_are_data(
    tmp_path: Path,
) -> None:
    """A Megatron-style ``.bin`` of token ids: pickle.load fails on its first byte."""
    path = tmp_path / "tokens.bin"
    path.write_bytes(np.arange(5, 4096, dtype=np.int32).tobytes())
    assert not ran_payload(path, "pickle")
    assert _errors(path) == set()


# -- np.load opens a zip by its end record, and each member as an array by its magic ---------


def test_a_zip_found_by_its_end_record_with_data_before_it_is_refused(tmp_path: Path) -> None:
    inner = _npz({"a.npy": _object_npy()})
    # An empty end record first (np.load's second zip magic), then a real archive.
    path = tmp_path / "arrays.npz"
    path.write_bytes(b"PK\x05\x06" + b"\0" * 18 + inner)
    assert ran_payload(path, "numpy")
    assert "RC538" in _errors(path), verify_file(path)[1]
    assert "per-file-ignores" in _messages(path)


def test_data_prepended_to_a_zip_is_refused(tmp_path: Path) -> None:
    """Python's zipfile shifts every offset by what was prepended; miniz does not."""
    inner = _npz({"a.npy": _object_npy()})
    fake_local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    path = tmp_path / "arrays.npz"
    path.write_bytes(fake_local + inner)
    assert ran_payload(path, "numpy")
    assert "RC538" in _errors(path), verify_file(path)[1]


def test_an_npz_member_is_an_array_by_its_magic_whatever_its_name(tmp_path: Path) -> None:
    path = tmp_path / "arrays.npz"
    path.write_bytes(_npz({"notes.txt": _object_npy()}))
    assert ran_payload(path, "numpy")
    assert "RC514" in _errors(path), verify_file(path)[1]


def test_a_real_npz_and_npy_still_pass(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", x=np.ones(3, np.float32), y=np.arange(4))
    np.savez_compressed(tmp_path / "b.npz", x=np.ones(3, np.float32))
    np.save(tmp_path / "c.npy", np.ones((2, 2)))
    for name in ("a.npz", "b.npz", "c.npy"):
        assert _errors(tmp_path / name) == set(), (name, verify_file(tmp_path / name)[1])


# -- torch's zip reader matches names case-insensitively -------------------------------------


def test_zip_members_differing_only_by_case_are_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zin:
        records = {name: zin.read(name) for name in zin.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in records.items():
            z.writestr(name, data)
            if name.endswith("data.pkl"):
                z.writestr(name[: -len("data.pkl")] + "DATA.pkl", exec_pickle())
    path = tmp_path / "model.pt"
    path.write_bytes(out.getvalue())
    assert "RC538" in _errors(path), verify_file(path)[1]


# -- torch.load unpacks a tar's ``storages`` member wherever it sits -------------------------


def _tar(members: list[tuple[str, bytes]], *, pax: bool) -> bytes:
    out = io.BytesIO()
    fmt = tarfile.PAX_FORMAT if pax else tarfile.USTAR_FORMAT
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if pax:
                info.pax_headers = {"comment": "x" * 40}
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("name", ["model.pth", "model.tar", "model"])
@pytest.mark.parametrize("pax", [True, False])
def test_a_tar_with_storages_after_other_members_is_refused(
    tmp_path: Path, name: str, pax: bool
) -> None:
    path = tmp_path / name
    path.write_bytes(_tar([("README", b"hello\n"), ("storages", exec_pickle())], pax=pax))
    assert ran_payload(path, "torch-full")
    assert _errors(path) & {"RC530", "RC538"}, verify_file(path)[1]


def test_a_tar_without_torch_members_is_data(tmp_path: Path) -> None:
    path = tmp_path / "shard-000.tar"
    path.write_bytes(_tar([("000.txt", b"a"), ("000.pickle", b"b")], pax=False))
    assert _errors(path) == set()


# -- the invariant over all of them: a pass means the loader ran nothing ---------------------


def test_whenever_verify_passes_no_loader_writes_the_canary(tmp_path: Path) -> None:
    cases = {
        "a.npy": b"}" + exec_pickle(0),
        "b.npy": _object_npy(),
        "c.npz": b"PK\x05\x06" + b"\0" * 18 + _npz({"a.npy": _object_npy()}),
        "d.bin": b"N0" + exec_pickle(0)[:-1] + b"\n.",
        "e.pkl": b"I1\n0" + exec_pickle(0),
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        if _errors(path):
            continue
        for loader in ("numpy", "pickle", "torch-full"):
            assert not ran_payload(path, loader), (name, loader)


def test_an_npz_whose_keys_differ_only_by_case_still_passes(tmp_path: Path) -> None:
    """numpy's lookup is exact (zipfile): only torch's reader folds case."""
    path = tmp_path / "keys.npz"
    np.savez(path, a=np.ones(2, np.float32), A=np.zeros(2, np.float32))
    loaded = np.load(path)
    assert float(loaded["a"][0]) == 1.0 and float(loaded["A"][0]) == 0.0
    assert _errors(path) == set(), verify_file(path)[1]


@pytest.mark.parametrize("name", ["model.gz", "model.z", "model.bz2", "model.xz"])
def test_a_compressed_pickle_joblib_would_inflate_is_refused(tmp_path: Path, name: str) -> None:
    import bz2
    import gzip
    import lzma
    import zlib

    pytest.importorskip("joblib")
    payload = b"K\x010" + exec_pickle(0)  # a first opcode no pickle writer starts with
    pack = {".gz": gzip.compress, ".z": zlib.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
    path = tmp_path / name
    path.write_bytes(pack[path.suffix](payload))
    assert ran_payload(path, "joblib")
    assert _errors(path), verify_file(path)[1]


def test_a_compressed_log_is_data(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "train.log.gz"
    path.write_bytes(gzip.compress(b"2026-12-03 INFO step 1 loss 0.5\n" * 200))
    assert _errors(path) == set(), verify_file(path)[1]
    assert verify_file(path)[0].kind == "data"

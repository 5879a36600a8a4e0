"""NaN/Inf for every float dtype spelling: an .npy descr in each numpy spelling and byte order,
object arrays by any name, and a torch v3 rebuild whose dtype retypes a byte storage.

The files are written by np.save / torch.save; the header's descr is then respelled the way a
hostile (or just old) writer might, and numpy itself confirms it reads the same array.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from oracle import exec_pickle, ran_payload

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def _codes(path: Path) -> set[str]:
    return {f.code for f in verify_file(path)[1] if f.severity >= Severity.WARNING}


def _respelled(array: np.ndarray, descr: str) -> bytes:
    """np.save's bytes with the header's descr replaced by ``descr`` (padding kept aligned)."""
    buf = io.BytesIO()
    np.save(buf, array)
    data = buf.getvalue()
    end = data.index(b"\n") + 1
    header = data[10:end].decode("latin1")
    old = repr(array.dtype.str)
    header = header.replace(f"'descr': {old}", f"'descr': {descr!r}").rstrip("\n").rstrip(" ")
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    return data[:8] + len(header).to_bytes(2, "little") + header.encode("latin1") + data[end:]


@pytest.mark.parametrize(
    ("descr", "dtype"),
    [
        ("<f8", np.float64),
        ("f8", np.float64),
        ("float64", np.float64),
        ("d", np.float64),
        ("double", np.float64),
        (">f4", np.dtype(">f4")),
        ("<f2", np.float16),
        ("e", np.float16),
        ("float32", np.float32),
        (">c8", np.dtype(">c8")),
    ],
)
def test_nan_is_found_whatever_the_descr_spelling(
    tmp_path: Path, descr: str, dtype: object
) -> None:
    a = np.ones(8, dtype=dtype)
    a[3] = np.nan
    path = tmp_path / "a.npy"
    path.write_bytes(_respelled(a, descr))
    loaded = np.load(path)  # numpy reads the respelled header as the same floats
    assert np.isnan(loaded.astype(np.complex128) if loaded.dtype.kind == "c" else loaded).any()
    assert "RC516" in _codes(path), verify_file(path)[1]


def test_a_structured_array_of_floats_is_not_passed_unscanned(tmp_path: Path) -> None:
    a = np.zeros(3, dtype=[("x", "<f4"), ("y", "<i4")])
    a["x"][1] = np.nan
    path = tmp_path / "s.npy"
    np.save(path, a)
    assert _codes(path) & {"RC516", "RC517"}, verify_file(path)[1]


def test_a_finite_big_endian_array_passes(tmp_path: Path) -> None:
    path = tmp_path / "a.npy"
    np.save(path, np.arange(10, dtype=">f8"))
    assert _codes(path) == set()
    path.write_bytes(_respelled(np.arange(10, dtype=np.float64), "float64"))
    assert _codes(path) == set()


@pytest.mark.parametrize(
    "descr", ["|O", "O", "object", "object_", [("a", "O")], [("a", "<f4"), ("b", "O")]]
)
def test_object_arrays_are_pickles_by_any_name(tmp_path: Path, descr: object) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([1, None], dtype=object), allow_pickle=True)
    data = buf.getvalue()
    end = data.index(b"\n") + 1
    header = data[10:end].decode("latin1").replace("'descr': '|O'", f"'descr': {descr!r}")
    header = header.rstrip("\n").rstrip(" ")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    path = tmp_path / "obj.npy"
    path.write_bytes(
        data[:8] + len(header).to_bytes(2, "little") + header.encode("latin1") + exec_pickle()
    )
    assert ran_payload(path, "numpy"), descr
    assert "RC514" in _codes(path), verify_file(path)[1]


def test_a_v3_rebuild_that_retypes_a_byte_storage_as_float_is_scanned_as_float(
    tmp_path: Path,
) -> None:
    t = torch.ones(4)
    t[1] = float("nan")
    buf = io.BytesIO()
    torch.save({"w": t}, buf)
    plain = tmp_path / "plain.pt"
    plain.write_bytes(buf.getvalue())
    ops = [op.name for op, _, _ in __import__("pickletools").genops(_data_pkl(plain))]
    if "BINPERSID" not in ops:  # pragma: no cover - torch.save's layout changed
        pytest.skip("torch.save no longer writes persistent ids")
    path = tmp_path / "retyped.pt"
    path.write_bytes(_v3_with_dtype(buf.getvalue()))
    loaded = torch.load(path, weights_only=True)["w"]
    assert loaded.dtype == torch.float32 and torch.isnan(loaded).any()
    assert "RC516" in _codes(path), verify_file(path)[1]


def _data_pkl(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))


def _v3_with_dtype(saved: bytes) -> bytes:
    """The archive with data.pkl rewritten: a ByteStorage of 16 bytes rebuilt by
    ``_rebuild_tensor_v3(..., torch.float32)``, the tensor torch.load returns is float32."""
    storage = (
        b"ctorch\nByteStorage\nq\x01X\x01\x00\x00\x000q\x02X\x03\x00\x00\x00cpuq\x03K\x10tq\x04"
    )
    pkl = (
        b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x05ctorch._utils\n_rebuild_tensor_v3\nq\x06"
        b"((X\x07\x00\x00\x00storageq\x07" + storage + b"QK\x00K\x04\x85K\x01\x85\x89"
        b"ccollections\nOrderedDict\n)Rq\x08ctorch\nfloat32\nq\x09tq\x0aRq\x0bs."
    )
    with zipfile.ZipFile(io.BytesIO(saved)) as zin:
        records = {n: zin.read(n) for n in zin.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in records.items():
            z.writestr(n, pkl if n.endswith("data.pkl") else data)
    return out.getvalue()

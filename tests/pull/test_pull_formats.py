"""Unit checks of the validators: exact NaN/Inf counts, the pickle machine, ZIP64."""

from __future__ import annotations

import collections
import os
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from pullkit import codes, validate_bytes

from rentcheck.pull.formats.finite import FLOAT_SPECS, count_nonfinite
from rentcheck.pull.formats.pickle_allowlist import NUMPY_GLOBALS
from rentcheck.pull.formats.pickle_safety import scan_pickle

TORCH_VIEW = {
    "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
    "F8_E5M2": torch.float8_e5m2, "F8_E4M3": torch.float8_e4m3fn,
    "F8_E4M3FNUZ": torch.float8_e4m3fnuz, "F8_E5M2FNUZ": torch.float8_e5m2fnuz,
    "F8_E8M0": torch.float8_e8m0fnu,
}  # fmt: skip
INT_OF = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@pytest.mark.parametrize("dtype", list(TORCH_VIEW))
def test_nonfinite_count_is_exact_on_every_bit_pattern_family(dtype: str) -> None:
    size = FLOAT_SPECS[dtype].itemsize
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=size * 20000, dtype=np.uint8).tobytes()
    if size <= 2:  # every bit pattern, not just random ones
        raw += np.arange(256**size, dtype=f"<u{size}").tobytes()
    ints = torch.frombuffer(bytearray(raw), dtype=INT_OF[size])
    values = ints.view(TORCH_VIEW[dtype]).double()
    want = (int(values.isnan().sum()), int(values.isinf().sum()))
    assert count_nonfinite(np, dtype, raw) == want
    assert want[0] > 0


def test_complex_tensors_are_scanned_per_component(tmp_path: Path) -> None:
    t = torch.zeros(10, dtype=torch.complex64)
    t[2] = torch.tensor(complex(float("nan"), 0))
    t[5] = torch.tensor(complex(0, float("inf")))
    torch.save({"c": t}, tmp_path / "c.pt")
    (issue,) = validate_bytes("c.pt", (tmp_path / "c.pt").read_bytes())
    assert issue.details == {"tensor": "c", "dtype": "C64", "nan": 1, "inf": 1}


def test_float8_tensors_in_a_torch_zip(tmp_path: Path) -> None:
    t = torch.zeros(16, dtype=torch.float8_e5m2)
    t[3] = float("inf")
    torch.save({"f8": t, "ok": torch.zeros(4, dtype=torch.float8_e4m3fn)}, tmp_path / "f.pt")
    (issue,) = validate_bytes("f.pt", (tmp_path / "f.pt").read_bytes())
    assert issue.details == {"tensor": "f8", "dtype": "F8_E5M2", "nan": 0, "inf": 1}


def _data_pkl(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))


def test_real_data_pkl_is_clean_and_named(corpus: Path) -> None:
    report = scan_pickle(_data_pkl(corpus / "ckpt" / "resume.pt"))
    assert report.unsafe == () and report.malformed is None
    names = {s.tensor for s in report.storages.values()}
    assert "model.0.weight" in names
    assert "optimizer.state.0.exp_avg" in names
    assert "rng" in names
    assert report.protocol == 2


class _Evil:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("true",))


HOSTILE = {
    "posix.system via GLOBAL": pickle.dumps(_Evil(), protocol=2),
    "builtins.eval": b"\x80\x02c__builtin__\neval\nX\x04\x00\x00\x001+1\x85R.",
    "subprocess.Popen": b"\x80\x04\x8c\nsubprocess\x8c\x05Popen\x93]\x85R.",
    "memo trick": b"\x80\x04\x8c\x05posix\x94\x8c\x06system\x9400h\x00h\x01\x93\x8c\x04true\x85R.",
    "INST": b"(S'true'\nios\nsystem\n.",
    "OBJ": b"\x80\x02(cos\nsystem\nX\x04\x00\x00\x00trueo.",
    "EXT1": b"\x80\x02\x82\x01)R.",
    "computed callable": b"\x80\x02ccollections\nOrderedDict\n)R)R.",
    "getattr": b"\x80\x02c__builtin__\ngetattr\n.",
    "computed STACK_GLOBAL": b"\x80\x04K\x01K\x02\x93.",
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_pickles_are_flagged_without_running(case: str) -> None:
    report = scan_pickle(HOSTILE[case])
    assert report.unsafe, report
    if case in ("memo trick", "posix.system via GLOBAL", "INST", "OBJ"):
        assert any("system" in u for u in report.unsafe), report.unsafe


# Harmless, but torch's weights_only unpickler refuses them: "torch will refuse", not hostile.
REFUSED = {
    "BUILD on a dict": b"\x80\x02}}b.",
    "protocol 4 FRAME": pickle.dumps({"a": [1, 2]}, protocol=4),
    "INST of an allowed class": b"(icollections\nOrderedDict\n.",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_harmless_constructs_torch_refuses_are_not_hostile(case: str) -> None:
    report = scan_pickle(REFUSED[case])
    assert report.unsafe == () and report.refused and report.malformed is None, report


MALFORMED = {
    "truncated": b"\x80\x02]q\x00(K\x01",
    "underflow": b"\x80\x02\x85.",
    "memo before write": b"\x80\x02h\x05.",
    "STOP on an empty mark": b"\x80\x02K\x01(.",
    "odd SETITEMS": b"\x80\x02}(K\x01u.",
    "no mark": b"\x80\x02t.",
    "bad opcode": b"\x80\x02\xff.",
    "empty": b"",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_pickles(case: str) -> None:
    assert scan_pickle(MALFORMED[case]).malformed


def test_numpy_scalars_are_opt_in() -> None:
    data = pickle.dumps({"best": np.float64(0.5)}, protocol=2)
    assert scan_pickle(data).unsafe
    assert scan_pickle(data, extra_allowed=NUMPY_GLOBALS).unsafe == ()


class _Storage:
    pass


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: object) -> object:
        return ("storage", torch.FloatStorage, "0", "cpu", 2) if isinstance(obj, _Storage) else None


class _Tensor:
    def __reduce__(self) -> tuple[object, ...]:
        hooks: collections.OrderedDict[str, object] = collections.OrderedDict()
        args = (_Storage(), 0, (10,), (1,), False, hooks)
        return (torch._utils._rebuild_tensor_v2, args)


def test_tensor_view_past_its_storage_is_caught() -> None:
    import io

    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump({"w": _Tensor()})
    report = scan_pickle(buf.getvalue())
    assert report.unsafe == ()
    assert report.bad_views == ("0",)


def _as_zip64(data: bytes) -> bytes:
    """Rewrite a zip's central directory in ZIP64 form (every size and offset in the extra)."""
    eocd = data.rindex(b"PK\x05\x06")
    _, _, _, _, count, _, cd_off, _ = struct.unpack_from("<4sHHHHIIH", data, eocd)
    out, i = [], cd_off
    for _ in range(count):
        f = list(struct.unpack_from("<4sHHHHHHIIIHHHHHII", data, i))
        name = data[i + 46 : i + 46 + f[10]]
        extra = struct.pack("<HHQQQ", 1, 24, f[9], f[8], f[16])
        i += 46 + f[10] + f[11] + f[12]
        f[8] = f[9] = f[16] = 0xFFFFFFFF
        f[11], f[12] = len(extra), 0
        out.append(struct.pack("<4sHHHHHHIIIHHHHHII", *f) + name + extra)
    cd = b"".join(out)
    z64_at = cd_off + len(cd)
    z64 = struct.pack(
        "<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(cd), cd_off
    )
    loc = struct.pack("<4sIQI", b"PK\x06\x07", 0, z64_at, 1)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return data[:cd_off] + cd + z64 + loc + end


def test_zip64_central_directory(corpus: Path, tmp_path: Path) -> None:
    src = corpus / "ckpt" / "model_fp16.pt"
    z64 = tmp_path / "z64.pt"
    z64.write_bytes(_as_zip64(src.read_bytes()))
    loaded = torch.load(z64, weights_only=True)  # torch agrees that the file is valid
    assert torch.equal(loaded["0.weight"], torch.load(src, weights_only=True)["0.weight"])
    assert validate_bytes("z64.pt", z64.read_bytes()) == []
    flipped = bytearray(z64.read_bytes())
    flipped[len(flipped) // 2] ^= 0x10
    assert codes(validate_bytes("z64.pt", bytes(flipped))) >= {"RC512"}
    forced = tmp_path / "forced.pt"
    with zipfile.ZipFile(forced, "w", zipfile.ZIP_STORED) as out, zipfile.ZipFile(src) as z:
        for info in z.infolist():
            with out.open(info.filename, "w", force_zip64=True) as dst:
                dst.write(z.read(info))
    assert validate_bytes("forced.pt", (tmp_path / "forced.pt").read_bytes()) == []


def test_storages_before_data_pkl_are_reported_as_unscanned(corpus: Path, tmp_path: Path) -> None:
    src = corpus / "ckpt" / "model_fp32.pt"
    with zipfile.ZipFile(src) as z:
        names = z.namelist()
        order = [n for n in names if "/data/" in n] + [n for n in names if "/data/" not in n]
        blobs = {n: z.read(n) for n in names}
    odd = tmp_path / "odd.pt"
    with zipfile.ZipFile(odd, "w", zipfile.ZIP_STORED) as out:
        for n in order:
            out.writestr(n, blobs[n])
    issues = validate_bytes("odd.pt", odd.read_bytes())
    assert codes(issues) == {"RC517"}
    assert "precede data.pkl" in issues[0].message


def test_pickle_scan_keeps_pickletools_escape_warnings_to_itself() -> None:
    """A crafted STRING opcode with a bad escape makes pickletools warn; scanning a user's
    checkpoint must not print Python warnings (nor fail under -W error)."""
    import warnings

    from rentcheck.pull.formats.pickle_safety import scan_pickle

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = scan_pickle(b"S'\\_'\n.")
    assert report.malformed is None and not report.unsafe

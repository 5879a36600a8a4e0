"""Corrupt twins of real checkpoints: every case gets the right rule, and nothing crashes."""

from __future__ import annotations

import json
import re
import struct
import zipfile
from pathlib import Path

import pytest
import torch
from pullkit import codes, validate_bytes
from safetensors.torch import save_file

from rentcheck.pull.verify import verify_pull

TRUNCATION_CASES = [
    ("st/model.safetensors", "RC511"),
    ("st/model-00002-of-00002.safetensors", "RC511"),
    ("ckpt/model_bf16.pt", "RC512"),
    ("ckpt/resume.pt", "RC512"),
    ("ckpt/legacy_fp32.pt", "RC513"),
    ("ckpt/optim_legacy.pth", "RC513"),
]


def cut_points(size: int) -> list[int]:
    sixteenths = [size * k // 16 for k in range(1, 16)]
    return sorted(set(sixteenths + [size - n for n in range(1, 101)]))


@pytest.mark.parametrize(("rel", "rule"), TRUNCATION_CASES)
def test_truncated_at_every_sixteenth_and_the_last_hundred_bytes(
    corpus: Path, rel: str, rule: str
) -> None:
    data = (corpus / rel).read_bytes()
    assert validate_bytes(rel, data) == []
    for cut in cut_points(len(data)):
        got = codes(validate_bytes(rel, data[:cut]))
        assert rule in got, (cut, got)
        assert got <= {rule, "RC513", "RC514", "RC515"}, (cut, got)
    empty = codes(validate_bytes(rel, b""))
    assert empty == ({"RC511"} if rule == "RC511" else {"RC515"})


@pytest.mark.parametrize(("rel", "extra"), [
    ("st/model.safetensors", set()),
    ("ckpt/model_fp32.pt", {"RC512"}),  # torch zips carry a CRC per record
    ("ckpt/legacy_bf16.pt", set()),
])  # fmt: skip
def test_one_flipped_bit_in_tensor_data(pulled: Path, rel: str, extra: set[str]) -> None:
    path = pulled / rel
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if not rel.endswith(".pt") or "legacy" in rel else _zip_data_offset(path)
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    result = verify_pull(pulled)
    assert {f.code for f in result.findings} == {"RC509"} | extra
    assert {f.path for f in result.findings} == {rel}


def _zip_data_offset(path: Path) -> int:
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("/data/0"))
    raw = path.read_bytes()
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    return int(info.header_offset + 30 + name_len + extra_len + 3)  # inside storage 0


def _st_bytes(header: object, data: bytes, *, length: int | None = None) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def _raw_st(header: bytes, data: bytes) -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def _t(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, object]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def _one(entry: dict[str, object], data: bytes, **kw: int) -> bytes:
    return _st_bytes({"a": entry}, data, **kw)


Z4, Z8, Z12 = b"\0" * 4, b"\0" * 8, b"\0" * 12
DUP = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],'
DUP += b'"data_offsets":[1,2]}}'
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 1\n"

ST_CASES = {
    "header-length-too-big": (_one(_t("F32", [1], 0, 4), Z4, length=10_000), "runs past"),
    "header-length-2**63": (_st_bytes({}, b"", length=2**63 + 12345), "exceeds the cap"),
    "header-length-short": (_one(_t("F32", [1], 0, 4), Z4, length=20), "not valid JSON"),
    "overlap": (_st_bytes({"a": _t("F32", [2], 0, 8), "b": _t("F32", [2], 4, 12)}, Z12), "overlap"),
    "gap": (_st_bytes({"a": _t("F32", [1], 0, 4), "b": _t("F32", [1], 8, 12)}, Z12), "gap"),
    "end-before-begin": (_one(_t("F32", [0], 4, 0), b""), "end >= begin"),
    "span": (_one(_t("F32", [3], 0, 8), Z8), "needs 12 bytes"),
    "dtype": (_one(_t("F31", [1], 0, 4), Z4), "unknown dtype"),
    "duplicate": (_raw_st(DUP, b"\0\0"), "duplicate key"),
    "metadata": (_st_bytes({"__metadata__": {"step": 5}}, b""), "__metadata__"),
    "trailing": (_one(_t("U8", [1], 0, 1), b"\0" * 101), "trailing"),
    "utf8": (struct.pack("<Q", 4) + b"\xff\xfe{}", "UTF-8"),
    "overflow": (_one(_t("F32", [2**40, 2**40], 0, 4), Z4), "overflows 64 bits"),
    "sub-byte": (_one(_t("F4", [3], 0, 1), b"\0"), "whole byte"),
    "lfs-pointer": (LFS, "git-lfs"),
    "tiny": (b"\x01\x02", "too short"),
    "array-of-arrays": (_st_bytes([[0]] * 100, b""), "only integers"),
    "deep": (struct.pack("<Q", 9) + b'{"a":{"b":{"c":{}}}}'[:9], "nested deeper|not valid JSON"),
}


@pytest.mark.parametrize("case", list(ST_CASES))
def test_safetensors_header_twins(case: str) -> None:
    data, message = ST_CASES[case]
    issues = validate_bytes("x.safetensors", data)
    assert codes(issues) == {"RC511"}, issues
    assert any(re.search(message, i.message) for i in issues), issues


def _plant(t: torch.Tensor, nan: int, inf: int) -> torch.Tensor:
    flat = t.reshape(-1)
    flat[3 : 3 + nan] = float("nan")
    flat[-inf - 1 : -1] = float("inf")
    flat[-1] = float("-inf")  # one more Inf, negative
    return t


DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


@pytest.mark.parametrize("fmt", ["safetensors", "zip", "legacy"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_nan_and_inf_planted_in_each_dtype(tmp_path: Path, fmt: str, dtype: str) -> None:
    good = torch.randn(4099).to(DTYPES[dtype])
    bad = _plant(torch.randn(300, 7).to(DTYPES[dtype]), nan=5, inf=2)
    tensors = {"good": good, "layers.1.weight": bad, "ids": torch.arange(7)}
    path = tmp_path / ("m.safetensors" if fmt == "safetensors" else "m.pt")
    if fmt == "safetensors":
        save_file(tensors, str(path))
    else:
        torch.save(tensors, path, _use_new_zipfile_serialization=fmt == "zip")
    data = path.read_bytes()
    for chunk in (1, 3, 4096, 1 << 20):  # elements straddle chunk boundaries
        issues = validate_bytes(path.name, data, chunk)
        assert codes(issues) == {"RC516"}, issues
        (issue,) = issues
        assert issue.details == {"tensor": "layers.1.weight", "dtype": dtype, "nan": 5, "inf": 3}


def _evil_class(canary: Path) -> type:
    class Evil:
        def __reduce__(self) -> tuple[object, ...]:
            import os

            return (os.system, (f"touch {canary}",))

    return Evil


@pytest.mark.parametrize("fmt", ["zip", "legacy", "pkl"])
def test_os_system_pickle_never_runs(tmp_path: Path, fmt: str) -> None:
    canary = tmp_path / "CANARY"
    evil = _evil_class(canary)()
    root = tmp_path / "pulled"
    root.mkdir()
    name = "evil.pkl" if fmt == "pkl" else "evil.pt"
    if fmt == "pkl":
        import pickle

        (root / name).write_bytes(pickle.dumps({"w": 1, "x": evil}, protocol=4))
    else:
        torch.save({"w": torch.ones(3), "x": evil}, root / name,
                   _use_new_zipfile_serialization=fmt == "zip")  # fmt: skip
    from pullkit import run_builder

    run_builder(root, check=True)
    result = verify_pull(root, deep=True)
    assert {f.code for f in result.findings} == {"RC514"}
    assert "posix.system" in result.findings[0].message
    assert not canary.exists()


def test_torch_zip_missing_storage_and_wrong_size(corpus: Path, tmp_path: Path) -> None:
    src = corpus / "ckpt" / "model_fp32.pt"
    with zipfile.ZipFile(src) as z:
        names = [i.filename for i in z.infolist()]
        blobs = {n: z.read(n) for n in names}
    prefix = names[0].split("/")[0]
    dropped = tmp_path / "dropped.pt"
    with zipfile.ZipFile(dropped, "w", zipfile.ZIP_STORED) as out:
        for n in names:
            if n != f"{prefix}/data/1":
                out.writestr(n, blobs[n])
    issues = validate_bytes("dropped.pt", dropped.read_bytes())
    assert codes(issues) == {"RC512"}
    assert "data/1' is missing" in issues[0].message
    resized = tmp_path / "resized.pt"
    with zipfile.ZipFile(resized, "w", zipfile.ZIP_STORED) as out:
        for n in names:
            out.writestr(n, blobs[n] + (b"\0\0\0\0" if n == f"{prefix}/data/0" else b""))
    issues = validate_bytes("resized.pt", resized.read_bytes())
    assert codes(issues) == {"RC512"} and "declares" in issues[0].message
    deflated = tmp_path / "deflated.pt"
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out:
        for n in names:
            out.writestr(n, blobs[n])
    assert codes(validate_bytes("deflated.pt", deflated.read_bytes())) == {"RC512"}
    notorch = tmp_path / "notorch.pt"
    with zipfile.ZipFile(notorch, "w") as out:
        out.writestr("readme.txt", "hi")
    assert codes(validate_bytes("notorch.pt", notorch.read_bytes())) == {"RC512"}


@pytest.mark.parametrize(("name", "data", "hint"), [
    ("best.pt", b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n", "git-lfs"),
    ("best.pth", b"<!DOCTYPE html><html>502 Bad Gateway</html>", "HTML"),
    ("best.ckpt", b"", "empty"),
    ("best.pt", b"\x00" * 600, "starts with"),
])  # fmt: skip
def test_files_that_are_not_checkpoints(name: str, data: bytes, hint: str) -> None:
    issues = validate_bytes(name, data)
    assert codes(issues) == {"RC515"}
    assert hint in issues[0].message
    assert validate_bytes("blob.bin", data) == []  # .bin is only validated when it looks like torch


def test_metrics_files_that_do_not_parse(pulled: Path) -> None:
    from pullkit import run_builder

    (pulled / "PULL_MANIFEST.json").unlink()
    (pulled / "metrics.json").write_text('{"loss": 0.31')
    (pulled / "config.yaml").write_text("a: [1, 2\n")
    (pulled / "history.jsonl").write_text('{"step": 1}\n{"step": \n')
    (pulled / "empty.json").write_text("")
    run_builder(pulled, check=True)
    result = verify_pull(pulled)
    assert {(f.code, f.path) for f in result.findings} == {
        ("RC518", "metrics.json"),
        ("RC518", "config.yaml"),
        ("RC518", "history.jsonl"),
        ("RC518", "empty.json"),
    }


def test_sharded_index_disagreeing_with_shards(pulled: Path) -> None:
    from pullkit import run_builder

    index_path = pulled / "st" / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    index["weight_map"]["ghost.weight"] = "model-00003-of-00003.safetensors"
    moved = next(k for k, v in index["weight_map"].items() if v.startswith("model-00001"))
    index["weight_map"][moved] = "model-00002-of-00002.safetensors"
    index_path.write_text(json.dumps(index))
    (pulled / "PULL_MANIFEST.json").unlink()
    run_builder(pulled, check=True)
    messages = [f.message for f in verify_pull(pulled).findings]
    assert {f.code for f in verify_pull(pulled).findings} == {"RC511"}
    assert any(
        "model-00003-of-00003.safetensors' named by the index is missing" in m for m in messages
    )
    assert any("lacks 1 tensors" in m for m in messages)
    assert any("does not list" in m for m in messages)

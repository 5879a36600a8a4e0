"""DCP checkpoints written through torch's ZStandard extension: each compressed range is
decompressed (bounded by what .metadata says it holds) and judged like an uncompressed one.

Before, a range with ``transform_descriptors`` was skipped: a NaN weight or a damaged range in a
compressed DCP checkpoint passed."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import zstandard

from rentcheck.pull.verify import verify_tree

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def _save(root: Path, weight: torch.Tensor) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemWriter
    from torch.distributed.checkpoint._extension import ZStandard

    state = {"model": {"weight": weight, "bias": torch.zeros(3)}, "step": 7}
    dcp.save(state, storage_writer=FileSystemWriter(str(root), _extensions=[ZStandard()]))


def _load(root: Path) -> dict[str, torch.Tensor]:
    import torch.distributed.checkpoint as dcp

    state = {"model": {"weight": torch.zeros(64, 3), "bias": torch.ones(3)}, "step": 0}
    dcp.load(state, checkpoint_id=str(root))
    return state["model"]


def _ranges(root: Path) -> dict[str, tuple[int, int]]:
    """fqn -> (offset, length), read with DCP's own unpickler (our own trusted file)."""
    with (root / ".metadata").open("rb") as f:
        meta = pickle.load(f)  # noqa: S301 - written by this test a line earlier
    return {k.fqn: (v.offset, v.length) for k, v in meta.storage_data.items()}


def test_compressed_ranges_are_scanned_nan_and_damage_caught(tmp_path: Path) -> None:
    good, nan = tmp_path / "good", tmp_path / "nan"
    _save(good, torch.ones(64, 3))
    bad = torch.ones(64, 3)
    bad[5, 1] = float("nan")
    _save(nan, bad)
    meta = (good / ".metadata").read_bytes()
    assert b"stream.zstd/1" in meta  # really compressed: the ranges are zstd frames
    (distcp,) = good.glob("*.distcp")
    offset, _ = _ranges(good)["model.weight"]
    assert distcp.read_bytes()[offset : offset + 4] == b"\x28\xb5\x2f\xfd"  # zstd magic
    assert torch.equal(_load(good)["weight"], torch.ones(64, 3))  # DCP itself reads it
    result = verify_tree(good, None)
    assert result.ok and not result.findings, result.findings
    result = verify_tree(nan, None)
    assert [(f.code, f.details.get("tensor")) for f in result.findings] == [
        ("RC516", "model.weight")]  # fmt: skip
    # a flipped byte inside the compressed weight range: zstd or the archive's CRC says so
    data = bytearray(distcp.read_bytes())
    offset, length = _ranges(good)["model.weight"]
    data[offset + length // 2] ^= 0x55
    distcp.write_bytes(bytes(data))
    codes = verify_tree(good, None).codes()
    assert codes & {"RC536", "RC512", "RC513"}, codes
    # truncated on the box: the last range runs past the end of the file
    data[offset + length // 2] ^= 0x55
    distcp.write_bytes(bytes(data[: len(data) - 40]))
    result = verify_tree(good, None)
    assert "RC536" in result.codes()


def test_a_range_that_inflates_past_its_chunk_is_a_cap(tmp_path: Path) -> None:
    """A crafted range: 64 MiB of zeros in a zstd frame of a few KiB, where .metadata says the
    chunk is 64x3 float32 (768 bytes). Decompression stops at the cap: RC533, not a read of it."""
    root = tmp_path / "bomb"
    _save(root, torch.ones(64, 3))
    (distcp,) = root.glob("*.distcp")
    with (root / ".metadata").open("rb") as f:
        meta = pickle.load(f)  # noqa: S301 - our own file
    bomb = zstandard.ZstdCompressor().compress(b"\0" * (64 << 20))
    assert len(bomb) < 64 * 1024
    with distcp.open("ab") as f:
        at = f.tell()
        f.write(bomb)
    for index, info in meta.storage_data.items():
        if index.fqn == "model.weight":
            info.offset, info.length = at, len(bomb)
    (root / ".metadata").write_bytes(pickle.dumps(meta))
    result = verify_tree(root, None)
    assert [(f.code, f.path) for f in result.findings] == [("RC533", ".metadata")]
    assert "inflates past" in result.findings[0].message


def test_without_zstandard_or_with_an_unknown_transform_it_says_so(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    _save(root, torch.ones(64, 3))
    code = textwrap.dedent(f"""
        import sys
        sys.modules["zstandard"] = None  # this interpreter has no zstandard: import fails
        from rentcheck.pull.verify import verify_tree
        result = verify_tree({str(root)!r}, None)
        print(result.ok, sorted({{f.code for f in result.findings}}), len(result.findings))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # a warning per range (3: step, weight, bias): named, never silently skipped; not blocking
    assert out.stdout.split() == ["True", "['RC537']", "3"], out.stderr
    meta = (root / ".metadata").read_bytes()
    (root / ".metadata").write_bytes(meta.replace(b"stream.zstd/1", b"stream.lz4x/1"))
    result = verify_tree(root, None)
    assert {f.code for f in result.findings} == {"RC537"}
    assert "stream.lz4x/1" in result.findings[0].message

"""Budgets: a small crafted file costs verify little work and memory, and a budget hit is a
refusal (a finding), never a hang or gigabytes of RSS.

Each case is judged in a child process that reports the findings, the seconds it took and the
growth of its peak RSS. Seconds are printed for the record, never asserted (the machine is
shared); what is asserted is the finding, that the child ended, and the memory it grew by.
"""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from rentcheck.pull.formats.joblib_values import MAX_DTYPE_VISITS

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from rentcheck.pull.filecheck import verify_file
    from rentcheck.pull.verify import verify_tree
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    if sys.argv[1] == "tree":
        codes = sorted(verify_tree(sys.argv[2], None).codes())
    else:
        codes = sorted({f.code for f in verify_file(sys.argv[2])[1]})
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    print(json.dumps({"codes": codes, "secs": time.perf_counter() - t, "grew_kib": grew}))
    """
)


def _judge(path: Path, how: str = "file") -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, how, str(path)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    answer: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    print(path.name, answer)
    return answer


def _shared_fields_dtype(depth: int) -> np.dtype:  # type: ignore[type-arg]
    """A structured dtype whose 64 fields all share one dtype, ``depth`` levels deep: pickled
    once per level (the memo), 64 ** depth fields when walked as a tree."""
    dt: np.dtype = np.dtype("<f4")  # type: ignore[type-arg]
    for _ in range(depth):
        dt = np.dtype([(f"f{i}", dt) for i in range(64)])
    return dt


def test_a_joblib_dtype_of_shared_fields_is_judged_without_walking_the_tree(
    tmp_path: Path,
) -> None:
    joblib = pytest.importorskip("joblib")
    path = tmp_path / "bomb.pkl"
    joblib.dump(np.empty(0, dtype=_shared_fields_dtype(4)), path)
    assert path.stat().st_size < 13_000
    answer = _judge(path)
    codes = answer["codes"]
    assert isinstance(codes, list)
    assert not {"RC514"} & set(codes), codes  # numpy dtypes, nothing hostile
    grew = answer["grew_kib"]
    assert isinstance(grew, int) and grew < 100 * 1024


def test_the_dtype_walk_has_a_node_budget() -> None:
    from rentcheck.pull.formats.joblib_values import Dict, Dtype, Unprovable, dtype_facts
    from rentcheck.pull.formats.pickle_machine import Leaf

    def leaf_dtype(serial: int) -> Dtype:
        d = Dtype(serial, "numpy.dtype", ("<f4", False, True))
        none = Leaf("none", None)
        d.state = (3, "<", none, none, none, 4, 1, 0)
        return d

    # a wide tree of distinct dtypes, more nodes than the budget: refused, not walked
    fields = Dict(0)
    for i in range(MAX_DTYPE_VISITS + 10):
        fields.items[f"f{i}"] = (leaf_dtype(i + 1), 0)
    fields.complete = True
    top = Dtype(0, "numpy.dtype", ("|V4", False, True))
    none = Leaf("none", None)
    top.state = (3, "|", none, tuple(fields.items), fields, 4, 1, 0)
    with pytest.raises(Unprovable, match="nested dtypes"):
        dtype_facts(top)


def _dcp_dir(root: Path) -> Path:
    import torch.distributed.checkpoint as dcp

    dcp.save({"model": {"w": torch.ones(8, 3)}, "step": 3}, checkpoint_id=str(root))
    return root / ".metadata"


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_a_dcp_metadata_with_a_huge_memo_index_is_refused_without_allocating_it(
    tmp_path: Path,
) -> None:
    meta = _dcp_dir(tmp_path / "dcp")
    data = meta.read_bytes()
    assert data[:1] == b"\x80"
    # LONG_BINPUT 2**28 of a None, popped: harmless to a dict memo, 2 GB to CPython's array
    meta.write_bytes(data[:2] + b"Nr" + (1 << 28).to_bytes(4, "little") + b"0" + data[2:])
    answer = _judge(tmp_path / "dcp", "tree")
    assert answer["codes"] == ["RC533"], answer
    grew = answer["grew_kib"]
    assert isinstance(grew, int) and grew < 100 * 1024


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_dcp_metadata_is_read_back_with_a_work_budget(tmp_path: Path) -> None:
    from rentcheck.pull.formats import dcp as dcp_format

    meta = _dcp_dir(tmp_path / "dcp")
    reader = dcp_format._Reader(meta.read_bytes())
    assert not isinstance(reader, pickle.Unpickler)  # never CPython's C unpickler
    # a state dict of 1000 entries applied by 2000 BUILDs: 2M entries from a ~25 KB stream
    state = b"}q\x00(" + b"".join(b"K" + bytes([i % 256]) + b"M" + i.to_bytes(2, "little")
                                  for i in range(1000)) + b"u"  # fmt: skip
    cls = b"ctorch.distributed.checkpoint.metadata\nMetadata\nq\x010"
    build = b"h\x01)\x81h\x00b0"
    stream = b"\x80\x02" + state + b"0" + cls + build * 2000 + b"N."
    assert len(stream) < 30_000
    issues = dcp_format.check_dcp(str(tmp_path), stream)
    assert [i.code for i in issues] == ["RC533"], issues


def test_a_real_dcp_checkpoint_still_verifies(tmp_path: Path) -> None:
    _dcp_dir(tmp_path / "dcp")
    assert _judge(tmp_path / "dcp", "tree")["codes"] == []


def test_a_pickle_naming_a_huge_memo_index_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.pt"
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    path.write_bytes(buf.getvalue())
    bare = tmp_path / "bare.pkl"
    bare.write_bytes(b"\x80\x02Nr" + (1 << 30).to_bytes(4, "little") + b".")
    assert _judge(bare)["codes"] == ["RC533"]
    assert _judge(path)["codes"] == []


@pytest.mark.parametrize("size", [b"\x8a\x05\x00\x00\x00\x00\x10", b"J\x00\x00\x00\x40"])
def test_an_allowed_constructor_asked_for_gigabytes_is_refused(tmp_path: Path, size: bytes) -> None:
    """bytearray(2**36) is allow-listed by torch and ten bytes of pickle: 64 GiB to load."""
    path = tmp_path / "alloc.pkl"
    path.write_bytes(b"\x80\x02cbuiltins\nbytearray\n" + size + b"\x85R.")
    assert _judge(path)["codes"] == ["RC533"]
    small = tmp_path / "small.pkl"
    small.write_bytes(b"\x80\x02cbuiltins\nbytearray\nM\x00\x04\x85R.")
    assert _judge(small)["codes"] == []

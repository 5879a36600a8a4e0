"""Differential fuzz: pickle streams from an opcode grammar, judged by rentcheck and by the
real loaders (in one subprocess beside a canary file).

* Wrapped as a torch file's ``data.pkl``: rentcheck accepts exactly when
  ``torch.load(weights_only=True)`` accepts.
* As a bare pickle: whenever rentcheck accepts, CPython's ``pickle.load`` looks up nothing
  outside the allow-list and imports or runs nothing.
"""

from __future__ import annotations

import functools
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parity_worker import LoaderWorker

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoaderWorker]:
    w = LoaderWorker(tmp_path_factory.mktemp("parity") / "canary", "torch")
    yield w
    w.close("a fuzzed pickle ran code in the reference loader")


CANARY_CODE = "open('canary', 'w').write('ran')"
GLOBALS = [
    b"collections\nOrderedDict\n",
    b"torch\nfloat32\n",
    b"torch\nSize\n",
    b"builtins\nset\n",
    b"builtins\nexec\n",
    b"os\nsystem\n",
    b"builtins\ngetattr\n",
    b"collections\ndefaultdict\n",
]
SIMPLE = [
    b"N", b"\x88", b"\x89", b"}", b"]", b")", b"\x8f", b"K\x07", b"M\x01\x02", b"J\xff\xff\xff\x7f",
    b"X\x03\x00\x00\x00abc", b"U\x02ab", b"\x8c\x01k", b"G?\xf0\x00\x00\x00\x00\x00\x00",
    b"\x8a\x02\x01\x01", b"X" + len(CANARY_CODE).to_bytes(4, "little") + CANARY_CODE.encode(),
]  # fmt: skip
STRUCTURE = [
    b"(", b"t", b"\x85", b"\x86", b"\x87", b"s", b"u", b"a", b"e", b"b",
    b"0", b"2", b"\x94", b"q\x00", b"q\x01", b"h\x00", b"h\x01", b"r\x00\x00\x00\x00",
    b"j\x00\x00\x00\x00", b"\x95\x00\x00\x00\x00\x00\x00\x00\x00", b"\x93", b"l", b"d", b"1",
    b"\x90",
]  # fmt: skip


@st.composite
def pickles(draw: st.DrawFn) -> bytes:
    proto = draw(st.sampled_from([b"\x80\x02", b"\x80\x02", b"\x80\x04", b""]))
    body = b""
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["simple", "simple", "structure", "global", "call"]))
        if kind == "simple":
            body += draw(st.sampled_from(SIMPLE))
        elif kind == "structure":
            body += draw(st.sampled_from(STRUCTURE))
        elif kind == "global":
            body += b"c" + draw(st.sampled_from(GLOBALS))
        else:  # a call shaped the way torch.save writes them: GLOBAL, args tuple, REDUCE
            body += b"c" + draw(st.sampled_from(GLOBALS)) + draw(st.sampled_from(
                [b")R", b"}\x85R", b"]\x85R", SIMPLE[-1] + b"\x85R", b")\x81"]))  # fmt: skip
    return proto + body + b"."


@functools.lru_cache(maxsize=1)
def _template() -> dict[str, bytes]:
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zin:
        return {rec: zin.read(rec) for rec in zin.namelist()}


def _torch_zip(data_pkl: bytes) -> bytes:
    """torch.save's archive with ``data_pkl`` in place of its own (records stay stored)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for rec, data in _template().items():
            z.writestr(rec, data_pkl if rec.endswith("data.pkl") else data)
    return out.getvalue()


def _accepted(path: Path) -> bool:
    _, findings = verify_file(path)
    return not any(f.severity >= Severity.ERROR for f in findings)


@FUZZ
@given(data=pickles())
def test_as_a_torch_file_rentcheck_accepts_exactly_when_torch_does(
    worker: LoaderWorker, tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "fuzz.pt"
    path.write_bytes(_torch_zip(data))
    theirs = worker.ask("torch", path)["ok"]
    assert _accepted(path) == theirs, (data, verify_file(path)[1])


@FUZZ
@given(data=pickles())
def test_as_a_bare_pickle_acceptance_means_cpython_reaches_nothing_unlisted(
    worker: LoaderWorker, tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "fuzz.pkl"
    path.write_bytes(data)
    if not _accepted(path):
        return
    answer = worker.ask("pickle", path)
    events = answer["events"]
    assert isinstance(events, list)
    reached = [name for what, name in events if what == "find_class"]
    assert all(name in ALLOWED_GLOBALS for name in reached), (data, reached)
    assert not [e for e in events if e[0] != "find_class"], (data, events)

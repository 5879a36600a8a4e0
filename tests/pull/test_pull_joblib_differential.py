"""Differential check for joblib files: whenever rentcheck accepts one, joblib.load of it (in a
subprocess with an audit hook, beside a canary) looks up nothing outside the allow-list and
imports or runs nothing; nor does plain pickle.load of the same file (DCP, a training script),
which reads the array bytes as opcodes.

hypothesis builds real joblib.dump output (arrays of several dtypes and layouts, plain values,
object arrays, sometimes a payload), then may splice opcodes into it (the stream joblib reads,
before compression), cut it or flip a byte, and compresses it as joblib would.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path

import joblib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parity_worker import LoaderWorker

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.joblib_machine import JOBLIB_GLOBALS
from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS

FUZZ = settings(max_examples=80, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
CANARY_CODE = "open('canary', 'w').write('ran')"
ALLOWED = ALLOWED_GLOBALS | JOBLIB_GLOBALS


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoaderWorker]:
    w = LoaderWorker(tmp_path_factory.mktemp("joblib-parity") / "canary", "joblib")
    yield w
    w.close("a joblib file rentcheck judged ran code in joblib.load")


class _Exec:
    def __reduce__(self) -> tuple[object, ...]:
        return (exec, (CANARY_CODE,))


DTYPES = ["f8", "f4", "f2", "c16", "i8", "u1", "?", "U3", "S2", "M8[s]", ">f8"]
arrays = st.builds(
    lambda dtype, shape, fortran: (np.asfortranarray if fortran else np.ascontiguousarray)(
        np.zeros(shape, dtype=dtype)
    ),
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 4), max_size=3).map(tuple),
    st.booleans(),
)
leaves = st.one_of(
    arrays,
    st.integers(-5, 5),
    st.text(max_size=4),
    st.none(),
    st.builds(lambda v: np.array([v, {"k": v}], dtype=object), st.integers()),
    st.just(np.float64(2.0)),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
SPLICES = [
    b"cbuiltins\nexec\n", b"cos\nsystem\n", b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n",
    b"cnumpy\ndtype\n", b"cnumpy\nndarray\n", b"\x8c" + bytes([len(CANARY_CODE)])
    + CANARY_CODE.encode(), b"\x85R", b")\x81", b"b", b"}", b"(", b"u", b"s", b"0", b"\x94",
    b"h\x01", b"h\x04", b"\x95\x10\x00\x00\x00\x00\x00\x00\x00", b"K\x03", b"\x85", b"t",
    b"\x8c\x05shape", b"\x8c\x05dtype", b"\x8c\x1bnumpy_array_alignment_bytes", b"N", b".",
]  # fmt: skip
CODECS = {
    "none": lambda b: b,
    "zlib": lambda b: zlib.compress(b, 3),
    "gzip": lambda b: gzip.compress(b, 3, mtime=0),
    "bz2": lambda b: bz2.compress(b, 1),
    "xz": lambda b: lzma.compress(b, preset=0),
}


@st.composite
def joblib_files(draw: st.DrawFn) -> bytes:
    value = draw(values)
    if draw(st.integers(0, 4)) == 0:  # sometimes a payload, plain or in an object array
        value = [value, draw(st.sampled_from([_Exec(), np.array([_Exec()], dtype=object)]))]
    buf = io.BytesIO()
    joblib.dump(value, buf, protocol=draw(st.sampled_from([2, 3, 4, 5])))
    data = buf.getvalue()
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["splice", "splice", "flip", "cut"]))
        if action == "splice":
            data = data[:at] + draw(st.sampled_from(SPLICES)) + data[at:]
        elif action == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
        elif action == "cut":
            data = data[:at]
    return bytes(CODECS[draw(st.sampled_from(sorted(CODECS)))](data))


@FUZZ
@given(data=joblib_files())
def test_when_rentcheck_accepts_a_joblib_file_joblib_load_reaches_nothing_unlisted(
    worker: LoaderWorker, tmp_path: Path, data: bytes
) -> None:
    # *.joblib: read by joblib.load; *.pkl: by joblib.load or plain pickle.load, both checked
    for name, modes in (("fuzz.joblib", ("joblib",)), ("fuzz.pkl", ("joblib", "pickle"))):
        path = tmp_path / name
        path.write_bytes(data)
        _, findings = verify_file(path)
        if any(f.severity >= Severity.ERROR for f in findings):
            continue
        for mode in modes:
            events = worker.ask(mode, path)["events"]
            assert isinstance(events, list)
            reached = [name for what, name in events if what == "find_class"]
            assert all(name in ALLOWED for name in reached), (name, mode, data, reached)
            assert not [e for e in events if e[0] != "find_class"], (name, mode, data, events)

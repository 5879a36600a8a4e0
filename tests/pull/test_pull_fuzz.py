"""Property tests: hostile bytes only ever produce FormatError-class outcomes (or findings)."""

from __future__ import annotations

import contextlib
import json
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pullkit import validate_bytes

from rentcheck.errors import FormatError
from rentcheck.pull.formats.pickle_safety import PickleReport, scan_pickle
from rentcheck.pull.formats.safetensors import SafetensorsHeader, parse_prefix
from rentcheck.pull.manifest import Manifest, parse_manifest

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VALID_HEADER = json.dumps({
    "__metadata__": {"format": "pt"},
    "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
}).encode()  # fmt: skip
VALID_ST = struct.pack("<Q", len(VALID_HEADER)) + VALID_HEADER + bytes(22)


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "overwrite"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[at:]
        else:
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(chunk)] = chunk
    return bytes(data)


def _st_outcome(blob: bytes, size: int) -> None:
    with contextlib.suppress(FormatError):
        assert isinstance(parse_prefix(blob, size), SafetensorsHeader)


@FUZZ
@given(st.binary(max_size=512), st.integers(0, 2**64))
def test_safetensors_parser_on_random_bytes(blob: bytes, size: int) -> None:
    _st_outcome(blob, size)


@FUZZ
@given(mutated(VALID_ST))
def test_safetensors_parser_on_mutated_headers(blob: bytes) -> None:
    _st_outcome(blob, len(blob))
    for chunk in (1, 5, 1 << 16):
        issues = validate_bytes("f.safetensors", blob, chunk)
        assert {i.code for i in issues} <= {"RC511", "RC516"}


@FUZZ
@given(st.binary(max_size=400))
def test_pickle_scanner_on_random_bytes(blob: bytes) -> None:
    assert isinstance(scan_pickle(blob), PickleReport)


def _data_pkl(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))


@pytest.fixture(scope="module")
def real_pickle(corpus: Path) -> bytes:
    return _data_pkl(corpus / "ckpt" / "resume.pt")


@FUZZ
@given(data=st.data())
def test_pickle_scanner_on_mutated_state_dicts(real_pickle: bytes, data: st.DataObject) -> None:
    report = scan_pickle(data.draw(mutated(real_pickle)))
    assert isinstance(report, PickleReport)


@FUZZ
@given(data=st.data())
def test_checkpoint_validators_on_mutated_files(corpus: Path, data: st.DataObject) -> None:
    rel = data.draw(st.sampled_from(["ckpt/model_fp16.pt", "ckpt/legacy_bf16.pt"]))
    blob = data.draw(mutated((corpus / rel).read_bytes()))
    issues = validate_bytes(rel, blob, data.draw(st.sampled_from([7, 4096, 1 << 20])))
    # damage, hostile, a cap, a construct torch would refuse (a mutated opcode), or a file
    # whose loader would unpickle what verify cannot read as its loader does (RC538)
    assert {i.code for i in issues} <= {
        "RC512",
        "RC513",
        "RC514",
        "RC515",
        "RC516",
        "RC530",
        "RC533",
        "RC538",
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4)
    ),
    max_leaves=20,
)
KEYS = ["schema", "run_id", "created_at", "host", "files", "path", "size", "mtime_ns", "sha256"]


def _manifest_outcome(raw: bytes) -> None:
    with contextlib.suppress(FormatError):
        assert isinstance(parse_manifest(raw), Manifest)


@FUZZ
@given(json_values, st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))
def test_manifest_parser_on_random_json(value: object, doc: dict[str, object]) -> None:
    _manifest_outcome(json.dumps(value).encode())
    _manifest_outcome(json.dumps(doc).encode())


VALID_MANIFEST = json.dumps({
    "schema": "rentcheck/manifest/v1", "run_id": "r", "created_at": "2026-01-01T00:00:00Z",
    "host": "h", "files": [{"path": "a/b.pt", "size": 1, "mtime_ns": 0, "sha256": "0" * 64}],
    "leftovers": [], "totals": {"files": 1, "bytes": 1},
}).encode()  # fmt: skip


@FUZZ
@given(mutated(VALID_MANIFEST))
def test_manifest_parser_on_mutated_manifests(raw: bytes) -> None:
    _manifest_outcome(raw)

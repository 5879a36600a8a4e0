"""The clean corpus verifies with no finding, the marker is written, and drift is noticed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rentcheck.errors import GateError
from rentcheck.model import Severity
from rentcheck.pull.manifest import load_manifest
from rentcheck.pull.marker import load_verified_marker, marker_drift, write_verified_marker
from rentcheck.pull.verify import verify_file, verify_pull, verify_tree


def test_clean_corpus_has_no_findings(pulled: Path) -> None:
    result = verify_pull(pulled, expected_run_id="run-0001", jobs=2)
    assert result.findings == ()
    assert result.ok
    kinds = {v.path: v.kind for v in result.files}
    assert kinds["ckpt/model_bf16.pt"] == "torch-zip"
    assert kinds["ckpt/legacy_fp32.pt"] == "torch-legacy"
    assert kinds["ckpt/optim_legacy.pth"] == "torch-legacy"
    assert kinds["st/model.safetensors"] == "safetensors"
    assert kinds["config.yaml"] == "yaml"
    assert kinds["train.csv"] == "data"
    manifest = load_manifest(pulled / "PULL_MANIFEST.json")
    assert {v.path: v.sha256 for v in result.files} == {e.path: e.sha256 for e in manifest.files}
    assert result.bytes_read == manifest.total_bytes
    tensors = {v.path: v.tensors for v in result.files}
    assert tensors["ckpt/resume.pt"] > 10  # model + optimizer moments + rng
    assert tensors["st/model.safetensors"] == 11


def test_clean_corpus_structure_only_and_small_chunks(pulled: Path) -> None:
    # Without a manifest only structure, safety and NaN/Inf are checked; tiny chunks exercise
    # every element and header that straddles a chunk boundary.
    result = verify_tree(pulled, None, jobs=1, chunk_size=1)
    assert result.findings == ()


def test_deep_load_of_clean_corpus(pulled: Path) -> None:
    result = verify_pull(pulled, deep=True, jobs=2)
    assert result.findings == ()
    assert result.deep


def test_marker_written_loaded_and_drift_detected(pulled: Path) -> None:
    result = verify_pull(pulled, expected_run_id="run-0001")
    path = write_verified_marker(result)
    assert path == pulled / "PULL_VERIFIED.json"
    marker = load_verified_marker(path)
    assert marker.run_id == "run-0001"
    assert marker.manifest_sha256 == load_manifest(pulled / "PULL_MANIFEST.json").sha256
    assert len(marker.files) == len(result.files)
    assert marker_drift(pulled, marker) == []
    # the marker itself is not part of the roster on a second verification
    assert verify_pull(pulled).findings == ()

    target = pulled / "ckpt" / "model_fp16.pt"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    (pulled / "notes.txt").unlink()
    drift = marker_drift(pulled, marker)
    assert {(f.code, f.path) for f in drift} == {
        ("RC521", "ckpt/model_fp16.pt"),
        ("RC521", "notes.txt"),
    }


def test_marker_refused_when_anything_is_wrong(pulled: Path) -> None:
    (pulled / "notes.txt").write_text("hellO\n")  # same size, other bytes
    result = verify_pull(pulled)
    assert "RC509" in result.codes()
    with pytest.raises(GateError, match="refusing"):
        write_verified_marker(result)
    assert not (pulled / "PULL_VERIFIED.json").exists()
    # a warning-level finding blocks only when asked to
    assert all(f.severity == Severity.ERROR for f in result.findings)


def test_marker_refused_without_manifest(pulled: Path) -> None:
    (pulled / "PULL_MANIFEST.json").unlink()
    result = verify_pull(pulled)
    assert result.codes() == {"RC501"}
    with pytest.raises(GateError, match="without a valid manifest"):
        write_verified_marker(result)


def test_verify_file_single_checkpoint(corpus: Path) -> None:
    verdict, findings = verify_file(corpus / "ckpt" / "resume.pt")
    assert findings == []
    assert verdict.kind == "torch-zip"
    assert verdict.path == "resume.pt"
    assert verdict.sha256 is not None and len(verdict.sha256) == 64

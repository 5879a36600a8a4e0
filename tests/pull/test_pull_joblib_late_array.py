"""joblib files are recognised wherever their first array is: ``joblib.dump(vectorizer,
"x.pkl")`` writes its vocabulary (often more than 64 KiB) before the first array."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def test_a_joblib_pkl_whose_first_array_comes_after_64_kib_verifies(tmp_path: Path) -> None:
    joblib = pytest.importorskip("joblib")
    vocab = {f"token{i:06d}": i for i in range(20_000)}
    path = tmp_path / "vectorizer.pkl"
    joblib.dump({"vocabulary_": vocab, "idf_": np.linspace(1, 2, 50)}, path)
    data = path.read_bytes()
    assert data.index(b"joblib.numpy_pickle") > 64 * 1024
    loaded = joblib.load(path)
    assert loaded["vocabulary_"]["token000007"] == 7
    verdict, findings = verify_file(path)
    assert verdict.kind == "joblib"
    assert [f for f in findings if f.severity >= Severity.ERROR] == [], findings


def test_a_joblib_nan_after_64_kib_is_found(tmp_path: Path) -> None:
    joblib = pytest.importorskip("joblib")
    weights = np.ones(8)
    weights[3] = np.nan
    path = tmp_path / "model.pkl"
    joblib.dump({"vocab": {f"t{i:06d}": i for i in range(20_000)}, "w": weights}, path)
    _, findings = verify_file(path)
    assert "RC516" in {f.code for f in findings}, findings

"""numpy .npy files: length and NaN/Inf for plain arrays; object arrays are pickles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import VerifyPolicy


class _Evil:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("true",))


def _codes(path: Path, **kw: object) -> list[str]:
    verdict, findings = verify_file(path, **kw)  # type: ignore[arg-type]
    assert verdict.kind == "npy"
    return sorted({f.code for f in findings})


def test_plain_arrays(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.ones((3, 4), np.float32))
    assert _codes(tmp_path / "ok.npy") == []
    nan = np.ones(5)
    nan[2] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    assert _codes(tmp_path / "nan.npy") == ["RC516"]
    data = (tmp_path / "ok.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-4])
    assert _codes(tmp_path / "cut.npy") == ["RC513"]
    (tmp_path / "weights").write_bytes(data)  # no suffix: judged by its magic bytes
    assert _codes(tmp_path / "weights") == []


def test_object_arrays_are_pickles(tmp_path: Path) -> None:
    np.save(tmp_path / "plain.npy", np.array([{"a": 1}, [1, 2]], dtype=object))
    np.save(tmp_path / "evil.npy", np.array([_Evil()], dtype=object))
    numpy_ok = VerifyPolicy.build(presets=["numpy-rng"])
    assert _codes(tmp_path / "plain.npy", policy=numpy_ok) == []
    assert _codes(tmp_path / "evil.npy", policy=numpy_ok) == ["RC514"]
    _, findings = verify_file(tmp_path / "evil.npy", policy=numpy_ok)
    assert any("posix.system" in f.message for f in findings)

"""``--deep``: the same allow-list as the static scan, and torch's reason without escapes."""

from __future__ import annotations

import os
import pickle
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from rentcheck.pull.deep import why_line
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import VerifyPolicy


def test_deep_load_uses_the_presets_globals(tmp_path: Path) -> None:
    path = tmp_path / "rng_state.pth"  # what the HF Trainer writes
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                "cpu": torch.get_rng_state()}, path)  # fmt: skip
    policy = VerifyPolicy.build(presets=["numpy-rng"])
    _, findings = verify_file(path, deep=True, policy=policy)
    assert findings == []  # static and torch.load(weights_only=True) both accept it
    _, findings = verify_file(path, deep=True)
    assert {f.code for f in findings} == {"RC514"}  # without it: refused before any load


class _Evil:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("true",))


def test_torch_messages_keep_the_why_line_without_escapes(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"x": _Evil()}, path)
    with pytest.raises(pickle.UnpicklingError) as info:
        torch.load(path, weights_only=True)
    assert len(str(info.value).splitlines()) > 3  # advice first, the reason further down
    line = why_line(info.value)
    assert "\n" not in line and "system" in line and line.startswith("UnpicklingError: ")
    # torch bolds its advice with terminal escapes when it thinks it may; they never get through
    loud = pickle.UnpicklingError(
        "Weights only load failed. \x1b[1mdo those steps only if you trust the source\x1b[0m.\n"
        "\x1b]0;title\x07WeightsUnpickler error: Unsupported global: GLOBAL posix.system\n"
    )
    assert why_line(loud) == (
        "UnpicklingError: WeightsUnpickler error: Unsupported global: GLOBAL posix.system"
    )

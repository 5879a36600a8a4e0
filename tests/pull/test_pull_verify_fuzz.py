"""The differential fuzzer (``benchmarks/verify_fuzz.py``), CI-sized: 50 structure-aware mutants
of real torch/numpy/safetensors/pickle/joblib files, each verified in-process and, when verify
passes it, loaded by the real loaders beside a canary. No disagreement may appear."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_fuzz", ROOT / "benchmarks/verify_fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["verify_fuzz"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [27, 2027])
def test_fifty_mutants_without_a_disagreement(seed: int) -> None:
    summary = _fuzzer().run(cases=50, minutes=0, seed=seed, out=None, quiet=True)
    assert summary["cases"] == 50
    per_format = summary["per_format"]
    assert isinstance(per_format, dict) and len(per_format) >= 8  # every writer's seed drawn
    assert summary["disagreements"] == []


def test_the_invariant_catches_a_payload() -> None:
    """The oracle side works: a hostile file loaded by the worker is reported."""
    fuzz = _fuzzer()
    allowed = fuzz._allowed()
    answer = {"ok": True, "events": [["find_class", "builtins.exec"]], "canary": True}
    why = fuzz._violations("pickle", answer, allowed, "pickle")
    assert any("canary" in w for w in why) and any("builtins.exec" in w for w in why)
    refused = {"ok": False, "why": "x", "events": [], "canary": False}
    assert fuzz._violations("torch", refused, allowed, "torch-zip")
    assert not fuzz._violations("torch", refused, allowed, "data")

"""The ``omegaconf`` preset: a Lightning checkpoint whose hyper_parameters are a Hydra
``DictConfig`` verifies with it, and without it the refusal names the preset that accepts it.

``data/lightning_hydra_hparams.ckpt`` was written by ``torch.save`` of a Lightning-shaped
checkpoint holding ``OmegaConf.create({...})`` (omegaconf 2.4: nested dicts, lists, None, a
bool, an interpolation). Where omegaconf is installed, torch itself is the oracle: with exactly
the preset's globals as ``safe_globals``, ``weights_only=True`` loads it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import OMEGACONF, PRESETS, VerifyPolicy, accept_hint

CKPT = Path(__file__).parent / "data" / "lightning_hydra_hparams.ckpt"


def test_a_hydra_dictconfig_checkpoint_verifies_with_the_omegaconf_preset() -> None:
    policy = VerifyPolicy.build(presets=["omegaconf"])
    _, findings = verify_file(CKPT, policy=policy)
    assert [f for f in findings if f.severity >= Severity.ERROR] == [], findings


def test_without_the_preset_the_refusal_names_it() -> None:
    _, findings = verify_file(CKPT)
    unsafe = [f for f in findings if f.code == "RC514"]
    assert unsafe, findings
    assert all("preset 'omegaconf'" in f.message for f in unsafe), [f.message for f in unsafe]
    assert 'presets = ["omegaconf"]' in unsafe[0].message


def test_a_global_no_preset_lists_is_named_with_allow_global() -> None:
    hint = accept_hint("mypkg.config.TrainConfig")
    assert "--allow-global mypkg.config.TrainConfig" in hint
    assert "preset" not in hint
    assert "omegaconf" in PRESETS and PRESETS["omegaconf"].allow_globals == OMEGACONF


def test_torch_loads_it_with_exactly_the_preset_globals() -> None:
    pytest.importorskip("omegaconf")
    objects = []
    for qual in OMEGACONF:
        module, _, name = qual.rpartition(".")
        objects.append(getattr(importlib.import_module(module), name))
    with torch.serialization.safe_globals(objects):
        ckpt = torch.load(CKPT, weights_only=True)
    assert type(ckpt["hyper_parameters"]).__name__ == "DictConfig"

"""Real framework checkpoints: with the matching preset, rentcheck's verdict is torch's.

The checkpoints are written by Lightning, the transformers Trainer, accelerate and
torch.distributed.checkpoint themselves (``fwkit.py``, in a subprocess); the reference verdict
is ``torch.load(weights_only=True)`` with the preset's globals passed to ``safe_globals``.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from rentcheck.model import Finding, Severity
from rentcheck.pull.deep import _resolve
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import PRESETS, VerifyPolicy
from rentcheck.pull.verify import verify_tree

FWKIT = Path(__file__).with_name("fwkit.py")


@pytest.fixture(scope="module")
def frameworks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("frameworks")
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, str(FWKIT), str(out)], check=True, env=env,
                   capture_output=True, timeout=600)  # fmt: skip
    return out


def _errors(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings if f.severity >= Severity.ERROR]


def _torch_accepts(path: Path, globals_: tuple[str, ...]) -> bool:
    objs = [(o, n) for n in globals_ if (o := _resolve(n)) is not None]
    try:
        with torch.serialization.safe_globals(objs):
            torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - any refusal is the reference verdict
        return False
    return True


CASES = {  # directory -> preset
    "lightning": "lightning",
    "hf": "hf-trainer",
    "accelerate": "accelerate",
}


@pytest.mark.parametrize("where", list(CASES))
def test_with_the_preset_every_verdict_is_torchs(frameworks: Path, where: str) -> None:
    preset = PRESETS[CASES[where]]
    policy = VerifyPolicy.build(presets=[preset.name])
    files = [p for p in (frameworks / where).rglob("*") if p.suffix in (".ckpt", ".pt", ".pth",
             ".bin", ".pkl")]  # fmt: skip
    assert files
    for path in files:
        _, findings = verify_file(path, rel=path.name, policy=policy)
        if path.name == "training_args.bin":  # a known full pickle: a note, torch refuses it
            assert [f.code for f in findings] == ["RC534"], findings
            assert not _torch_accepts(path, preset.allow_globals)
            continue
        ours = not _errors(findings)
        assert ours == _torch_accepts(path, preset.allow_globals), (path.name, findings)
        assert ours, (path.name, findings)
        # without the preset, rentcheck refuses exactly when torch does
        _, bare = verify_file(path, rel=path.name)
        assert (not _errors(bare)) == _torch_accepts(path, ()), (path.name, bare)


def test_default_lightning_checkpoint_passes_with_notes(frameworks: Path) -> None:
    (ckpt,) = (frameworks / "lightning").rglob("*.ckpt")
    _, findings = verify_file(ckpt)
    assert _errors(findings) == []
    notes = [f for f in findings if f.code == "RC531"]
    assert {f.details["tensor"].split("{")[0] for f in notes} == {
        "callbacks.EarlyStopping", "callbacks.ModelCheckpoint"}  # fmt: skip
    assert all(f.severity is Severity.NOTE for f in notes)


def test_nan_in_a_lightning_weight_fails(frameworks: Path, tmp_path: Path) -> None:
    (ckpt,) = (frameworks / "lightning").rglob("*.ckpt")
    state = torch.load(ckpt, weights_only=True)
    state["state_dict"]["layer.weight"][0, 0] = float("nan")
    torch.save(state, tmp_path / "nan.ckpt")
    _, findings = verify_file(tmp_path / "nan.ckpt")
    bad = [f for f in findings if f.code == "RC516"]
    assert [f.details["tensor"] for f in bad] == ["state_dict.layer.weight"]
    assert {f.code for f in findings} == {"RC516", "RC531"}  # the sentinels stay notes


def test_nonfinite_path_policy_can_make_callbacks_fail(frameworks: Path) -> None:
    (ckpt,) = (frameworks / "lightning").rglob("*.ckpt")
    policy = VerifyPolicy.build(nonfinite_paths={"callbacks.*": "fail"})
    _, findings = verify_file(ckpt, policy=policy)
    assert _errors(findings) == ["RC516", "RC516"]


class _Evil:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, ("echo pwned",))


def test_dcp_metadata_is_scanned_with_dcps_allow_list(frameworks: Path, tmp_path: Path) -> None:
    dcp = tmp_path / "dcp"
    shutil.copytree(frameworks / "dcp", dcp)
    result = verify_tree(dcp, None)
    assert result.ok, result.findings
    assert {v.path: v.kind for v in result.files}[".metadata"] == "pickle"
    (dcp / ".metadata").write_bytes(pickle.dumps(_Evil(), protocol=4))
    result = verify_tree(dcp, None)
    assert {(f.code, f.path) for f in result.findings} == {("RC514", ".metadata")}


def _sharded_bin(root: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
    state = model.state_dict()
    names = list(state)
    weight_map = {}
    for n, part in enumerate((names[:2], names[2:]), 1):
        shard = f"pytorch_model-0000{n}-of-00002.bin"
        torch.save({k: state[k] for k in part}, root / shard)
        weight_map |= dict.fromkeys(part, shard)
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (root / "pytorch_model.bin.index.json").write_text(json.dumps(index))


def test_bin_index_damage_classes_are_caught(tmp_path: Path) -> None:
    root = tmp_path / "model"
    root.mkdir()
    _sharded_bin(root)
    assert verify_tree(root, None).ok
    second = root / "pytorch_model-00002-of-00002.bin"
    data = second.read_bytes()
    second.write_bytes(data[: len(data) // 2])  # truncated
    assert "RC512" in verify_tree(root, None).codes()
    flipped = bytearray(data)
    flipped[data.index(b"data/0") + 200] ^= 0x10  # a byte inside the first storage
    second.write_bytes(bytes(flipped))
    assert "RC512" in verify_tree(root, None).codes()  # the record's CRC32
    second.unlink()  # deleted on the box
    result = verify_tree(root, None)
    assert [(f.code, f.path) for f in result.findings if f.code == "RC535"] == [
        ("RC535", "pytorch_model.bin.index.json")]  # fmt: skip
    assert "missing" in result.findings[0].message


def _dcp_save(root: Path, weight: torch.Tensor) -> None:
    import torch.distributed.checkpoint as dcp

    dcp.save({"model": {"weight": weight, "bias": torch.zeros(3)}, "step": 7},
             checkpoint_id=str(root))  # fmt: skip


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
def test_dcp_ranges_and_nan_are_checked(tmp_path: Path) -> None:
    good, nan = tmp_path / "good", tmp_path / "nan"
    _dcp_save(good, torch.ones(64, 3))
    bad = torch.ones(64, 3)
    bad[5, 1] = float("nan")
    _dcp_save(nan, bad)
    assert verify_tree(good, None).ok
    result = verify_tree(nan, None)
    assert [(f.code, f.details.get("tensor")) for f in result.findings] == [
        ("RC516", "model.weight")]  # fmt: skip
    (distcp,) = good.glob("*.distcp")
    data = distcp.read_bytes()
    distcp.write_bytes(data[: len(data) // 2])  # truncated on the box
    codes = verify_tree(good, None).codes()
    assert "RC536" in codes
    distcp.unlink()  # missing
    result = verify_tree(good, None)
    assert {f.code for f in result.findings} == {"RC536"}
    assert all("missing" in f.message for f in result.findings)


def _hf_pull(frameworks: Path, tmp_path: Path, config: str) -> tuple[Path, Path]:
    project, pulled = tmp_path / "project", tmp_path / "pulled"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text(config)
    shutil.copytree(frameworks / "hf" / "checkpoint-1", pulled)
    from pullkit import run_builder

    run_builder(pulled, "-o", str(pulled / "PULL_MANIFEST.json"), check=True)
    return project, pulled


def _verify_json(cli: Any, project: Path, pulled: Path) -> tuple[int, dict[str, set[str]]]:
    res = cli("verify", str(pulled), "--output-format", "json", cwd=project)
    doc = json.loads(res.out)
    by_path: dict[str, set[str]] = {}
    for f in doc["results"]:
        by_path.setdefault(f["path"], set()).add(f["code"])
    return res.code, by_path


def test_hf_trainer_preset_and_per_file_ignores_from_the_config(
    frameworks: Path, tmp_path: Path, cli: Any
) -> None:
    bare = "[tool.rentcheck.verify]\n"
    code, found = _verify_json(cli, *_hf_pull(frameworks, tmp_path / "a", bare))
    assert code == 1
    assert found == {"rng_state.pth": {"RC514"}, "training_args.bin": {"RC514"}}
    ignoring = bare + 'per-file-ignores = {"rng_state.pth" = ["RC514"]}\n'
    code, found = _verify_json(cli, *_hf_pull(frameworks, tmp_path / "b", ignoring))
    assert (code, found) == (1, {"training_args.bin": {"RC514"}})
    preset = bare + 'presets = ["hf-trainer"]\n'
    code, found = _verify_json(cli, *_hf_pull(frameworks, tmp_path / "c", preset))
    assert (code, found) == (0, {"training_args.bin": {"RC534"}})


def test_unknown_preset_is_a_config_error(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rentcheck.verify]\npresets = ["hf"]\n')
    (tmp_path / "pulled").mkdir()
    res = cli("verify", str(tmp_path / "pulled"), cwd=tmp_path)
    assert res.code == 2 and "unknown preset 'hf'" in res.err and "hf-trainer" in res.err

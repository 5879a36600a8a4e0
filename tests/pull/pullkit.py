"""Helpers for the pull tests: the corpus builder, the builder runner, in-memory validation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import safetensors.torch as safetensors_torch
import torch

from rentcheck.payload import manifest_builder
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.formats.dispatch import choose_validator

BUILDER = Path(manifest_builder.__file__)


def _mlp_state(dtype: torch.dtype, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(96, 160), torch.nn.LayerNorm(160), torch.nn.Linear(160, 48)
    )
    for p in model.parameters():
        with torch.no_grad():
            p.copy_(torch.randn(p.shape, generator=gen))
    return {k: v.to(dtype) for k, v in model.state_dict().items()}


def _resume_checkpoint() -> dict[str, object]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(4, 32)).sum().backward()
        opt.step()
        sched.step()
    return {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "epoch": 3,
        "global_step": 1200,
        "best_metric": 0.3125,
        "rng": torch.get_rng_state(),
        "python_rng": (3, tuple(range(10)), None),
        "tags": {"ema", "fp32"},
    }


def build_corpus(root: Path) -> None:
    """Every clean file the acceptance text asks for, under ``root``."""
    ckpt, st = root / "ckpt", root / "st"
    ckpt.mkdir(parents=True)
    st.mkdir()
    for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16),
                        ("bf16", torch.bfloat16), ("fp64", torch.float64)):  # fmt: skip
        torch.save(_mlp_state(dtype, 1), ckpt / f"model_{name}.pt")
    torch.save(
        {"index": torch.arange(5000, dtype=torch.int64), "mask": torch.ones(300, dtype=torch.bool)},
        ckpt / "model_int64.pt",
    )
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        torch.save(_mlp_state(dtype, 2), ckpt / f"legacy_{name}.pt",
                   _use_new_zipfile_serialization=False)  # fmt: skip
    torch.save(_resume_checkpoint(), ckpt / "resume.pt")
    torch.save(_resume_checkpoint()["optimizer"], ckpt / "optim_legacy.pth",
               _use_new_zipfile_serialization=False)  # fmt: skip
    mixed = _mlp_state(torch.float32, 3)
    mixed |= {
        "half": torch.randn(64, 33).half(),
        "bf": torch.randn(128).bfloat16(),
        "dbl": torch.randn(17).double(),
        "ids": torch.arange(99),
        "empty": torch.zeros(0),
    }
    safetensors_torch.save_file(mixed, str(st / "model.safetensors"), metadata={"format": "pt"})
    shard_a = {k: v for k, v in mixed.items() if k.startswith("0.")}
    shard_b = {k: v for k, v in mixed.items() if not k.startswith("0.")}
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    safetensors_torch.save_file(shard_a, str(st / names[0]))
    safetensors_torch.save_file(shard_b, str(st / names[1]))
    weight_map = {k: names[0] for k in shard_a} | {k: names[1] for k in shard_b}
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (st / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (root / "metrics.json").write_text(json.dumps({"loss": 0.3125, "psnr": 31.2, "n": 100}))
    (root / "config.yaml").write_text("lr: 0.001\nbatch: 32\nlayers: [1, 2, 3]\n")
    (root / "history.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n')
    (root / "train.csv").write_text("step,loss\n1,2.0\n2,1.5\n")
    (root / "notes.txt").write_text("hello\n")


def run_builder(*args: object, check: bool = False) -> subprocess.CompletedProcess[str]:
    """The builder exactly as the box runs it: isolated, no site-packages."""
    cmd = [sys.executable, "-I", "-S", str(BUILDER), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise AssertionError(proc.stderr)
    return proc


def validate_bytes(rel: str, data: bytes, chunk: int = 1 << 16) -> list[Issue]:
    """Run the validator ``verify`` would choose for ``rel`` over ``data`` in ``chunk`` pieces."""
    choice = choose_validator(rel, len(data), data[:512], lambda off, n: data[off : off + n])
    if choice.validator is None:
        return []
    view = memoryview(data)
    for i in range(0, len(data), chunk):
        choice.validator.feed(view[i : i + chunk])
    return choice.validator.finish()


def codes(issues: list[Issue]) -> set[str]:
    return {i.code for i in issues}

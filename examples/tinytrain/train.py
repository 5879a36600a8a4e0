#!/usr/bin/env python3
"""tinytrain: a small, deterministic, exactly resumable PyTorch training run.

On every start it loads the newest usable checkpoint in --ckpt-dir, so relaunching the very same
command after a crash or kill continues the run, and the per-step losses and final weights
match an uninterrupted run bit for bit (on CPU).

Output contract (stdout, one line each):
    starting from scratch | resumed from <path> at step=<k>
    step=<n> loss=<%.9e>                        once per optimizer step, n is 1-based
    saved <path> step=<n>                       after a checkpoint is durable
    done step=<n> weights_sha256=<hex>
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional
from torch.optim import AdamW
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader

# isort: split
# Sibling modules of this script, importable because Python puts the script's directory first
# on sys.path; kept in their own block since no tool config knows them as first-party.
import checkpoint
from config import Config, ConfigError, ScheduleConfig, load_config
from data import Batch, ResumableRandomSampler, make_dataset, make_loader
from model import MLP, build_model

DEFAULT_CONFIG = Path(__file__).resolve().with_name("config.json")
EXIT_USAGE = 2


class SettingsError(ValueError):
    """Command-line settings are inconsistent with each other or with this machine."""


class ResumeMismatchError(RuntimeError):
    """The checkpoint was written by a run whose numerics differ from this one."""


@dataclass(frozen=True)
class Settings:
    """Effective run settings: config.json values overridden by command-line flags."""

    steps: int
    ckpt_dir: Path
    ckpt_every: int
    keep_last: int
    seed: int
    device: torch.device
    batch_size: int
    num_workers: int
    num_threads: int
    sleep_per_step: float


@dataclass
class Position:
    step: int = 0
    epoch: int = 0
    index: int = 0  # samples of the current epoch already trained on


@dataclass
class Parts:
    model: MLP
    optimizer: AdamW
    scheduler: LambdaLR
    sampler: ResumableRandomSampler
    loader: DataLoader[Batch]
    grad_clip_norm: float


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    # No abbreviations: launchers and gates match flags by their exact spelling.
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="JSON config file")
    parser.add_argument("--steps", type=int, help="train until this optimizer step (total)")
    parser.add_argument("--ckpt-dir", type=Path, default=Path("checkpoints"))
    parser.add_argument("--ckpt-every", type=int, help="checkpoint every M steps")
    parser.add_argument("--keep-last", type=int, help="checkpoints to keep")
    parser.add_argument("--seed", type=int, help="seed for init, dropout and shuffling")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument(
        "--sleep-per-step",
        type=float,
        default=0.0,
        help="pause after each step, mimicking a slow accelerator so that external "
        "kill-at-step-k tooling has a realistic window (does not change the numbers)",
    )
    return parser.parse_args(argv)


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise SettingsError(f"{name} must be >= 1, got {value}")
    return value


def resolve_device(spec: str) -> torch.device:
    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise SettingsError(f"invalid --device {spec!r}: {exc}") from exc
    if device.type not in {"cpu", "cuda"}:
        raise SettingsError(f"--device must be cpu or cuda[:N], got {spec!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SettingsError(
            f"--device {spec} requested but CUDA is not available "
            f"(torch {torch.__version__}, torch.version.cuda={torch.version.cuda})"
        )
    return device


def resolve_settings(args: argparse.Namespace, cfg: Config) -> Settings:
    def pick(flag: int | None, default: int) -> int:
        return default if flag is None else flag

    batch_size = _positive("--batch-size", pick(args.batch_size, cfg.train.batch_size))
    if batch_size > cfg.data.num_samples:
        # With drop_last an epoch would then have no batch at all and training would spin.
        raise SettingsError(f"--batch-size {batch_size} exceeds {cfg.data.num_samples} samples")
    if args.num_workers < 0:
        raise SettingsError(f"--num-workers must be >= 0, got {args.num_workers}")
    if not math.isfinite(args.sleep_per_step) or args.sleep_per_step < 0:
        raise SettingsError(f"--sleep-per-step must be >= 0, got {args.sleep_per_step}")
    seed = pick(args.seed, cfg.seed)
    if seed < 0:
        raise SettingsError(f"--seed must be >= 0, got {seed}")
    return Settings(
        steps=_positive("--steps", pick(args.steps, cfg.train.steps)),
        ckpt_dir=args.ckpt_dir,
        ckpt_every=_positive("--ckpt-every", pick(args.ckpt_every, cfg.train.ckpt_every)),
        keep_last=_positive("--keep-last", pick(args.keep_last, cfg.train.keep_last)),
        seed=seed,
        device=resolve_device(args.device),
        batch_size=batch_size,
        num_workers=args.num_workers,
        num_threads=cfg.train.num_threads,
        sleep_per_step=args.sleep_per_step,
    )


def configure_runtime(settings: Settings) -> None:
    # Intra-op parallel reductions may sum in a different order with another thread count.
    torch.set_num_threads(settings.num_threads)
    if settings.device.type == "cuda":
        # cuBLAS reads this once, on first use; deterministic mode refuses to run without it.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # Turns a silently nondeterministic kernel into an error instead of a resume mismatch.
    torch.use_deterministic_algorithms(True)


def lr_multiplier(schedule: ScheduleConfig) -> Callable[[int], float]:
    """Linear warmup, then cosine decay to min_lr_ratio at schedule.total_steps, then flat."""

    def multiplier(done_steps: int) -> float:
        if done_steps < schedule.warmup_steps:
            return (done_steps + 1) / schedule.warmup_steps
        decay_steps = max(1, schedule.total_steps - schedule.warmup_steps)
        progress = min(1.0, (done_steps - schedule.warmup_steps) / decay_steps)
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        return schedule.min_lr_ratio + (1.0 - schedule.min_lr_ratio) * cosine

    return multiplier


def build_parts(cfg: Config, settings: Settings) -> Parts:
    # Seeded before construction so initial weights are a function of --seed alone; a resume
    # overwrites them and the RNG state anyway.
    torch.manual_seed(settings.seed)
    random.seed(settings.seed)
    model = build_model(cfg).to(settings.device)
    optimizer = AdamW(
        model.parameters(),
        lr=cfg.optimizer.lr,
        betas=cfg.optimizer.betas,
        eps=cfg.optimizer.eps,
        weight_decay=cfg.optimizer.weight_decay,
    )
    scheduler = LambdaLR(optimizer, lr_lambda=lr_multiplier(cfg.schedule))
    dataset = make_dataset(cfg.data)
    # Offsets give the shuffle and the loader streams of their own, distinct from dropout's.
    sampler = ResumableRandomSampler(len(dataset), seed=settings.seed + 1)
    loader = make_loader(
        dataset, sampler, settings.batch_size, settings.num_workers, seed=settings.seed + 2
    )
    return Parts(model, optimizer, scheduler, sampler, loader, cfg.optimizer.grad_clip_norm)


def run_fingerprint(cfg: Config, settings: Settings) -> dict[str, Any]:
    """What must be equal between a run and its relaunch for the continuation to be exact."""
    return {
        "config_numerics_sha256": cfg.numerics_digest(),
        "seed": settings.seed,
        "batch_size": settings.batch_size,
    }


def capture_rng(device: torch.device) -> dict[str, Any]:
    version, internal, gauss_next = random.getstate()
    # Lists, ints, floats and tensors only, so torch.load(weights_only=True) accepts it.
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": [version, list(internal), gauss_next],
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    if device.type == "cuda":
        if "cuda" in state:
            torch.cuda.set_rng_state(state["cuda"], device)
        else:
            print(
                "warning: checkpoint has no CUDA RNG state (written on CPU?); "
                "dropout after the resume will not match an uninterrupted run",
                file=sys.stderr,
            )


def build_payload(
    parts: Parts, position: Position, settings: Settings, fingerprint: dict[str, Any]
) -> dict[str, Any]:
    return {
        "format": checkpoint.FORMAT,
        "step": position.step,
        "run": fingerprint,
        "model": parts.model.state_dict(),
        "optimizer": parts.optimizer.state_dict(),
        "scheduler": parts.scheduler.state_dict(),
        "position": {
            "epoch": position.epoch,
            "index": position.index,
            "sampler_epoch_start_state": parts.sampler.epoch_start_state(),
        },
        "rng": capture_rng(settings.device),
    }


def restore(
    parts: Parts,
    loaded: checkpoint.LoadedCheckpoint,
    settings: Settings,
    fingerprint: dict[str, Any],
) -> Position:
    payload = loaded.payload
    saved_run = payload["run"]
    if saved_run != fingerprint:
        changed = ", ".join(
            f"{key}: {saved_run.get(key)!r} -> {value!r}"
            for key, value in fingerprint.items()
            if saved_run.get(key) != value
        )
        raise ResumeMismatchError(
            f"{loaded.path} was written by a run with different settings ({changed}); "
            "use the original settings or a fresh --ckpt-dir"
        )
    parts.model.load_state_dict(payload["model"])
    parts.optimizer.load_state_dict(payload["optimizer"])
    parts.scheduler.load_state_dict(payload["scheduler"])
    saved = payload["position"]
    parts.sampler.resume_at(saved["sampler_epoch_start_state"], saved["index"])
    restore_rng(payload["rng"], settings.device)
    return Position(step=payload["step"], epoch=saved["epoch"], index=saved["index"])


def train_step(parts: Parts, features: Tensor, labels: Tensor, device: torch.device) -> float:
    parts.model.train()
    features, labels = features.to(device), labels.to(device)
    parts.optimizer.zero_grad(set_to_none=True)
    loss = functional.cross_entropy(parts.model(features), labels)
    torch.autograd.backward(loss)
    torch.nn.utils.clip_grad_norm_(parts.model.parameters(), parts.grad_clip_norm)
    parts.optimizer.step()
    parts.scheduler.step()
    return float(loss.item())


def save_checkpoint(
    parts: Parts, position: Position, settings: Settings, fingerprint: dict[str, Any]
) -> None:
    payload = build_payload(parts, position, settings, fingerprint)
    path = checkpoint.save_atomic(payload, settings.ckpt_dir, position.step)
    # Only now that the new file is durable may older ones go.
    checkpoint.prune(settings.ckpt_dir, settings.keep_last, position.step)
    print(f"saved {path} step={position.step}", flush=True)


def train(
    parts: Parts, position: Position, settings: Settings, fingerprint: dict[str, Any]
) -> None:
    while position.step < settings.steps:
        # One iterator per epoch; after a resume the first one replays the saved epoch's order.
        for features, labels in parts.loader:
            loss = train_step(parts, features, labels, settings.device)
            position.step += 1
            position.index += len(labels)
            # %.9e round-trips float32 exactly, so equal text means bit-equal losses.
            print(f"step={position.step} loss={loss:.9e}", flush=True)
            if position.step % settings.ckpt_every == 0 or position.step == settings.steps:
                save_checkpoint(parts, position, settings, fingerprint)
            if position.step >= settings.steps:
                return
            if settings.sleep_per_step > 0:
                time.sleep(settings.sleep_per_step)
        position.epoch += 1
        position.index = 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = load_config(args.config)
        settings = resolve_settings(args, cfg)
    except (ConfigError, SettingsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    configure_runtime(settings)
    settings.ckpt_dir.mkdir(parents=True, exist_ok=True)
    for stale in checkpoint.remove_stale_temp_files(settings.ckpt_dir):
        print(f"note: removed stale temp file {stale}", file=sys.stderr)

    parts = build_parts(cfg, settings)
    fingerprint = run_fingerprint(cfg, settings)
    loaded = checkpoint.load_newest_valid(settings.ckpt_dir)
    if loaded is None:
        position = Position()
        print("starting from scratch", flush=True)
    else:
        try:
            position = restore(parts, loaded, settings, fingerprint)
        except ResumeMismatchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"resumed from {loaded.path} at step={position.step}", flush=True)

    train(parts, position, settings, fingerprint)
    digest = checkpoint.weights_sha256(parts.model.state_dict())
    print(f"done step={position.step} weights_sha256={digest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

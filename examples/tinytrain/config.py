"""Typed, strictly validated view of config.json.

Unknown or missing keys are errors: a silently ignored typo would make two runs that look
identical train differently, which is exactly what the resume gate must never see.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """The config file is unreadable or does not match the expected schema."""


@dataclass(frozen=True)
class DataConfig:
    seed: int
    num_samples: int
    num_features: int
    num_classes: int
    label_noise: float


@dataclass(frozen=True)
class ModelConfig:
    hidden_sizes: tuple[int, ...]
    dropout: float


@dataclass(frozen=True)
class OptimizerConfig:
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    grad_clip_norm: float


@dataclass(frozen=True)
class ScheduleConfig:
    warmup_steps: int
    # Pinned here, not derived from --steps: extending a run with a larger --steps must not
    # change the learning rate of steps that were already taken.
    total_steps: int
    min_lr_ratio: float


@dataclass(frozen=True)
class TrainConfig:
    steps: int
    batch_size: int
    ckpt_every: int
    keep_last: int
    num_threads: int


@dataclass(frozen=True)
class Config:
    seed: int
    data: DataConfig
    model: ModelConfig
    optimizer: OptimizerConfig
    schedule: ScheduleConfig
    train: TrainConfig

    def numerics_digest(self) -> str:
        """Digest of every setting that changes the numbers a run produces.

        The `train` section is excluded on purpose: its step count, checkpoint cadence and
        thread count may differ between a run and its relaunch without breaking exactness
        (batch size is checked separately because the CLI can override it).
        """
        relevant = {
            "data": asdict(self.data),
            "model": asdict(self.model),
            "optimizer": asdict(self.optimizer),
            "schedule": asdict(self.schedule),
        }
        canonical = json.dumps(relevant, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _section(raw: dict[str, Any], name: str, keys: set[str]) -> dict[str, Any]:
    value = raw.get(name)
    if not isinstance(value, dict):
        raise ConfigError(f"section {name!r} must be a JSON object")
    missing = keys - value.keys()
    unknown = value.keys() - keys
    if missing or unknown:
        raise ConfigError(
            f"section {name!r}: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}"
        )
    return value


def _int(section: str, key: str, value: Any, minimum: int) -> int:
    # bool is a subclass of int; `"steps": true` is a typo, not the number 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{section}.{key} must be an integer >= {minimum}, got {value!r}")
    return value


def _float(section: str, key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{section}.{key} must be a number, got {value!r}")
    if not low <= float(value) <= high:
        raise ConfigError(f"{section}.{key} must be in [{low}, {high}], got {value!r}")
    return float(value)


def _parse_data(raw: dict[str, Any]) -> DataConfig:
    s = _section(raw, "data", {"seed", "num_samples", "num_features", "num_classes", "label_noise"})
    return DataConfig(
        seed=_int("data", "seed", s["seed"], 0),
        num_samples=_int("data", "num_samples", s["num_samples"], 1),
        num_features=_int("data", "num_features", s["num_features"], 1),
        num_classes=_int("data", "num_classes", s["num_classes"], 2),
        label_noise=_float("data", "label_noise", s["label_noise"], 0.0, 1.0),
    )


def _parse_model(raw: dict[str, Any]) -> ModelConfig:
    s = _section(raw, "model", {"hidden_sizes", "dropout"})
    sizes = s["hidden_sizes"]
    if not isinstance(sizes, list):
        raise ConfigError(f"model.hidden_sizes must be a list, got {sizes!r}")
    return ModelConfig(
        hidden_sizes=tuple(_int("model", "hidden_sizes[]", size, 1) for size in sizes),
        dropout=_float("model", "dropout", s["dropout"], 0.0, 0.99),
    )


def _parse_optimizer(raw: dict[str, Any]) -> OptimizerConfig:
    s = _section(raw, "optimizer", {"lr", "betas", "eps", "weight_decay", "grad_clip_norm"})
    betas = s["betas"]
    if not isinstance(betas, list) or len(betas) != 2:
        raise ConfigError(f"optimizer.betas must be a list of two numbers, got {betas!r}")
    return OptimizerConfig(
        lr=_float("optimizer", "lr", s["lr"], 0.0, 10.0),
        betas=(
            _float("optimizer", "betas[0]", betas[0], 0.0, 0.999999),
            _float("optimizer", "betas[1]", betas[1], 0.0, 0.999999),
        ),
        eps=_float("optimizer", "eps", s["eps"], 0.0, 1.0),
        weight_decay=_float("optimizer", "weight_decay", s["weight_decay"], 0.0, 10.0),
        grad_clip_norm=_float("optimizer", "grad_clip_norm", s["grad_clip_norm"], 0.0, 1e6),
    )


def _parse_schedule(raw: dict[str, Any]) -> ScheduleConfig:
    s = _section(raw, "schedule", {"warmup_steps", "total_steps", "min_lr_ratio"})
    return ScheduleConfig(
        warmup_steps=_int("schedule", "warmup_steps", s["warmup_steps"], 0),
        total_steps=_int("schedule", "total_steps", s["total_steps"], 1),
        min_lr_ratio=_float("schedule", "min_lr_ratio", s["min_lr_ratio"], 0.0, 1.0),
    )


def _parse_train(raw: dict[str, Any]) -> TrainConfig:
    s = _section(raw, "train", {"steps", "batch_size", "ckpt_every", "keep_last", "num_threads"})
    return TrainConfig(
        steps=_int("train", "steps", s["steps"], 1),
        batch_size=_int("train", "batch_size", s["batch_size"], 1),
        ckpt_every=_int("train", "ckpt_every", s["ckpt_every"], 1),
        keep_last=_int("train", "keep_last", s["keep_last"], 1),
        num_threads=_int("train", "num_threads", s["num_threads"], 1),
    )


def load_config(path: Path) -> Config:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path} must contain a JSON object")
    expected = {"seed", "data", "model", "optimizer", "schedule", "train"}
    if raw.keys() != expected:
        raise ConfigError(
            f"config {path}: expected top-level keys {sorted(expected)}, got {sorted(raw)}"
        )
    return Config(
        seed=_int("config", "seed", raw["seed"], 0),
        data=_parse_data(raw),
        model=_parse_model(raw),
        optimizer=_parse_optimizer(raw),
        schedule=_parse_schedule(raw),
        train=_parse_train(raw),
    )

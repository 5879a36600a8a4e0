"""The audit gate's settings: ``[tool.rentcheck.audit]`` validated, then command-line overrides.

Sizes may be integers (bytes) or strings such as ``"8GiB"``, ``"500 MB"``, ``"2G"``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.config import Config, check_section_keys, section_error
from rentcheck.errors import UsageError

__all__ = ["AuditSettings", "Budget", "audit_settings", "format_size", "parse_size"]

SECTION = "audit"
KEYS = (
    "paths",
    "budget",
    "durable_mounts",
    "dataloader_workers",
    "worker_memory_bytes",
    "main_memory_bytes",
    "threads",
    "min_free_inodes",
    "max_inode_use",
    "nearly_full",
    "small_root_bytes",
    "min_shm_bytes",
    "expect_gpu",
    "min_gpus",
    "max_vram_in_use",
    "python",
    "torch",
    "caches",
    "script_roots",
    "timeout",
    "connect_timeout",
    "walk_seconds",
    "profile",
    "ssh_config",
)
BUDGET_KEYS = ("checkpoint_bytes", "keep", "scratch_bytes", "roles")
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4, "p": 1000**5}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
GIB = 1 << 30


def parse_size(text: str | int | float) -> int:
    """``"8GiB"`` -> 8589934592, ``"2G"``/``"2GB"`` -> 2000000000; plain numbers are bytes."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"negative size: {text!r}")
        return int(text)
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (use bytes or e.g. 8GiB, 500MB)")
    number, prefix, binary, _ = match.groups()
    prefix = prefix.lower()
    if binary and not prefix:
        raise ValueError(f"not a size: {text!r}")
    scale = 1024 ** ("kmgtp".index(prefix) + 1) if binary else _UNITS[prefix]
    return int(float(number) * scale)


def format_size(value: float | None) -> str:
    if value is None:
        return "unknown"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class Budget:
    """Disk the run will need on each budgeted path: checkpoint x keep + scratch."""

    checkpoint_bytes: int = 0
    keep: int = 1
    scratch_bytes: int = 0
    total_override: int | None = None  # `--budget SIZE` states the total directly
    roles: tuple[str, ...] | None = None  # None: every configured path

    @property
    def total(self) -> int:
        if self.total_override is not None:
            return self.total_override
        return self.checkpoint_bytes * self.keep + self.scratch_bytes

    def describe(self) -> str:
        if self.total_override is not None:
            return format_size(self.total)
        return (
            f"{self.keep} x {format_size(self.checkpoint_bytes)} + "
            f"{format_size(self.scratch_bytes)} = {format_size(self.total)}"
        )


@dataclass(frozen=True)
class AuditSettings:
    paths: Mapping[str, str] = field(default_factory=dict)
    budget: Budget = Budget()
    durable_mounts: tuple[str, ...] = ()
    dataloader_workers: int = 0
    worker_memory_bytes: int = 0
    main_memory_bytes: int = 0
    threads: int = 0
    min_free_inodes: int = 0
    max_inode_use: float = 0.95
    nearly_full: float = 0.90
    small_root_bytes: int = 64 * GIB
    min_shm_bytes: int = GIB
    expect_gpu: bool | None = None  # None: expected over SSH, not for --host local
    min_gpus: int = 1
    max_vram_in_use: float = 0.5
    python: str = "python3"
    torch: bool | None = None  # None: probe torch when a GPU is expected
    python_configured: bool = False  # `python` came from the config or --python
    caches: tuple[str, ...] = ()
    script_roots: tuple[str, ...] = ()
    timeout: float = 60.0
    connect_timeout: float | None = None  # None: ssh_config's ConnectTimeout, else 10 s
    walk_seconds: float = 2.0
    profile: str | None = None
    ssh_config: str | None = None

    def gpu_expected(self, host: str) -> bool:
        return self.expect_gpu if self.expect_gpu is not None else host != "local"

    def probe_torch(self, host: str) -> bool:
        return self.torch if self.torch is not None else self.gpu_expected(host)


def _number(config: Config, key: str, value: Any, kind: type, minimum: float = 0) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise section_error(config, SECTION, key, f"must be a number, not {value!r}")
    if kind is int and not float(value).is_integer():
        raise section_error(config, SECTION, key, f"must be a whole number, not {value!r}")
    if value < minimum:
        raise section_error(config, SECTION, key, f"must be at least {minimum}")
    return kind(value)


def _size(config: Config, key: str, value: Any) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise section_error(config, SECTION, key, str(exc), hint='e.g. "8GiB"') from None


def _strings(config: Config, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise section_error(config, SECTION, key, "must be a list of paths")
    return tuple(value)


def _budget(config: Config, table: Any) -> Budget:
    if not isinstance(table, dict):
        raise section_error(
            config, SECTION, "budget", "must be a table of " + ", ".join(BUDGET_KEYS)
        )
    for key in table:
        if key not in BUDGET_KEYS:
            raise section_error(
                config, SECTION, f"budget.{key}", "unknown key", "known: " + ", ".join(BUDGET_KEYS)
            )
    roles = table.get("roles")
    return Budget(
        checkpoint_bytes=_size(config, "budget.checkpoint_bytes", table.get("checkpoint_bytes", 0)),
        keep=_number(config, "budget.keep", table.get("keep", 1), int, 1),
        scratch_bytes=_size(config, "budget.scratch_bytes", table.get("scratch_bytes", 0)),
        roles=None if roles is None else _strings(config, "budget.roles", roles),
    )


_SIZES = ("worker_memory_bytes", "main_memory_bytes", "small_root_bytes", "min_shm_bytes")
_INTS = ("dataloader_workers", "threads", "min_free_inodes", "min_gpus")
_FRACTIONS = ("max_inode_use", "nearly_full", "max_vram_in_use")
_SECONDS = ("timeout", "connect_timeout", "walk_seconds")


def _from_config(config: Config) -> dict[str, Any]:
    table = check_section_keys(config, SECTION, KEYS)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "paths":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
            ):
                raise section_error(config, SECTION, key, "must map roles to paths")
            values[key] = dict(value)
        elif key == "budget":
            values[key] = _budget(config, value)
        elif key in ("durable_mounts", "caches", "script_roots"):
            values[key] = _strings(config, key, value)
        elif key in _SIZES:
            values[key] = _size(config, key, value)
        elif key in _INTS:
            values[key] = _number(config, key, value, int)
        elif key in _FRACTIONS:
            values[key] = _number(config, key, value, float)
            if values[key] > 1:
                raise section_error(config, SECTION, key, "must be a fraction between 0 and 1")
        elif key in _SECONDS:
            values[key] = _number(config, key, value, float, 0.1)
        elif key in ("expect_gpu", "torch"):
            if not isinstance(value, bool):
                raise section_error(config, SECTION, key, "must be true or false")
            values[key] = value
        elif key == "ssh_config" and isinstance(value, str) and value:
            # Relative to the config file, like every other path in it.
            values[key] = os.path.join(config.root, os.path.expanduser(value))
        elif isinstance(value, str) and value:  # python, profile
            values[key] = value
        else:
            raise section_error(config, SECTION, key, "must be a non-empty string")
    return values


def parse_path_option(text: str) -> tuple[str, str]:
    role, sep, path = text.partition("=")
    if not sep or not role or not path:
        raise UsageError(f"--path {text!r} is not ROLE=PATH", hint="e.g. --path data=/root/data")
    return role, path


def parse_budget_option(text: str, base: Budget) -> Budget:
    """``--budget 40GiB`` (a total) or ``--budget checkpoint=8GiB,keep=3,scratch=10GiB``."""
    if "=" not in text:
        try:
            return dataclasses.replace(base, total_override=parse_size(text))
        except ValueError as exc:
            raise UsageError(f"--budget: {exc}") from None
    changes: dict[str, Any] = {"total_override": None}
    names = {"checkpoint": "checkpoint_bytes", "keep": "keep", "scratch": "scratch_bytes"}
    for part in text.split(","):
        key, _, value = part.partition("=")
        attr = names.get(key.strip().removesuffix("_bytes"))
        if attr is None:
            raise UsageError(
                f"--budget: unknown part {key!r}", hint="use checkpoint=, keep=, scratch="
            )
        try:
            changes[attr] = int(value) if attr == "keep" else parse_size(value)
        except ValueError as exc:
            raise UsageError(f"--budget {key}: {exc}") from None
    return dataclasses.replace(base, **changes)


def audit_settings(
    config: Config,
    *,
    paths: Sequence[str] = (),
    budget: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> AuditSettings:
    """Settings from the config section, then ``--path``/``--budget`` and other CLI values."""
    values = _from_config(config)
    settings = AuditSettings(**values)
    if paths:
        merged = dict(settings.paths)
        merged.update(parse_path_option(p) for p in paths)
        settings = dataclasses.replace(settings, paths=merged)
    if budget:
        settings = dataclasses.replace(
            settings, budget=parse_budget_option(budget, settings.budget)
        )
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    given["python_configured"] = "python" in values or "python" in given
    return dataclasses.replace(settings, **given)

"""Settings of the launch and watch gates: ``[tool.rentcheck.launch]`` / ``.watch``, then CLI."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from rentcheck.config import Config, check_section_keys, section_error

__all__ = [
    "LAUNCH_KEYS",
    "WATCH_KEYS",
    "LaunchSettings",
    "WatchSettings",
    "launch_settings",
    "launch_settings_view",
    "watch_settings",
    "watch_settings_view",
]

LAUNCH_KEYS = (
    "audit-max-age",
    "session",
    "log",
    "cwd",
    "env",
    "checkpoint-dir",
    "detach",
    "first-step-timeout",
    "step-patterns",
    "timeout",
)
WATCH_KEYS = (
    "session",
    "stall-after",
    "checkpoint-max-age",
    "expected-duration",
    "disk-max-used",
    "disk-paths",
    "gpu",
    "timeout",
    "step-patterns",
)


def _patterns(config: Config, section: str, value: Any) -> tuple[str, ...]:
    from rentcheck.run.logparse import DEFAULT_STEP_PATTERNS, compile_patterns

    if value is None:
        return DEFAULT_STEP_PATTERNS
    patterns = tuple(value) if isinstance(value, (list, tuple)) else (str(value),)
    try:
        compile_patterns(patterns)
    except (ValueError, TypeError) as exc:  # re.error is a ValueError
        raise section_error(config, section, "step-patterns", str(exc)) from None
    return patterns


def _age(config: Config, section: str, key: str, value: Any) -> float | None:
    from rentcheck.gates.order import parse_age

    if value is None:
        return None
    try:
        return parse_age(str(value))
    except ValueError as exc:
        raise section_error(config, section, key, str(exc), "e.g. 90s, 30m, 6h") from None


@dataclasses.dataclass(frozen=True)
class LaunchSettings:
    session: str = "train"
    log: str | None = None
    cwd: str = "~"
    env: tuple[str, ...] = ()
    checkpoint_dir: str | None = None
    detach: str = "auto"
    first_step_timeout: float = 60.0
    step_patterns: tuple[str, ...] = ()
    timeout: float = 60.0  # server-side limit of the launch exec itself


@dataclasses.dataclass(frozen=True)
class WatchSettings:
    session: str = "train"
    stall_after: float = 1200.0  # log unchanged this long while alive: degraded
    checkpoint_max_age: float | None = None
    expected_duration: float | None = None
    disk_max_used: float = 95.0  # percent of bytes or inodes
    disk_paths: Mapping[str, str] = dataclasses.field(default_factory=dict)
    gpu: bool = True
    timeout: float = 30.0
    step_patterns: tuple[str, ...] = ()


def _given(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (overrides or {}).items() if v is not None and v != ()}


def launch_settings(config: Config, overrides: Mapping[str, Any] | None = None) -> LaunchSettings:
    table = check_section_keys(config, "launch", LAUNCH_KEYS)
    env = table.get("env", [])
    if isinstance(env, str):
        env = [env]
    detach = str(table.get("detach", "auto"))
    if detach not in ("auto", "tmux", "setsid"):
        raise section_error(config, "launch", "detach", f"{detach!r}", "auto, tmux or setsid")
    settings = LaunchSettings(
        session=str(table.get("session", "train")),
        log=str(table["log"]) if "log" in table else None,
        cwd=str(table.get("cwd", "~")),
        env=tuple(str(e) for e in env),
        checkpoint_dir=str(table["checkpoint-dir"]) if "checkpoint-dir" in table else None,
        detach=detach,
        first_step_timeout=_age(
            config, "launch", "first-step-timeout", table.get("first-step-timeout")
        )
        or 60.0,
        step_patterns=_patterns(config, "launch", table.get("step-patterns")),
        timeout=_age(config, "launch", "timeout", table.get("timeout")) or 60.0,
    )
    given = _given(overrides)
    if "env" in given:
        given["env"] = (*settings.env, *given["env"])
    return dataclasses.replace(settings, **given) if given else settings


def watch_settings(config: Config, overrides: Mapping[str, Any] | None = None) -> WatchSettings:
    table = check_section_keys(config, "watch", WATCH_KEYS)
    used = table.get("disk-max-used", 95)
    if not isinstance(used, (int, float)) or not 0 < used <= 100:
        raise section_error(config, "watch", "disk-max-used", f"{used!r}", "a percent, e.g. 95")
    paths = table.get("disk-paths", {})
    if not isinstance(paths, dict):
        raise section_error(config, "watch", "disk-paths", "must map names to box paths")
    launch = config.section("launch")
    settings = WatchSettings(
        session=str(table.get("session", launch.get("session", "train"))),
        stall_after=_age(config, "watch", "stall-after", table.get("stall-after")) or 1200.0,
        checkpoint_max_age=_age(
            config, "watch", "checkpoint-max-age", table.get("checkpoint-max-age")
        ),
        expected_duration=_age(
            config, "watch", "expected-duration", table.get("expected-duration")
        ),
        disk_max_used=float(used),
        disk_paths={str(k): str(v) for k, v in paths.items()},
        gpu=bool(table.get("gpu", True)),
        timeout=_age(config, "watch", "timeout", table.get("timeout")) or 30.0,
        step_patterns=_patterns(
            config, "watch", table.get("step-patterns", launch.get("step-patterns"))
        ),
    )
    given = _given(overrides)
    return dataclasses.replace(settings, **given) if given else settings


def launch_settings_view(config: Config) -> dict[str, Any]:
    """``rentcheck config``'s view of the launch section: its keys as the file spells them."""
    settings = launch_settings(config)
    view = {
        f.name.replace("_", "-"): getattr(settings, f.name) for f in dataclasses.fields(settings)
    }
    view["audit-max-age"] = config.section("launch").get("audit-max-age", "24h")
    return view


def watch_settings_view(config: Config) -> dict[str, Any]:
    settings = watch_settings(config)
    return {
        f.name.replace("_", "-"): getattr(settings, f.name) for f in dataclasses.fields(settings)
    }

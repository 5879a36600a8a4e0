"""``[tool.rentcheck.verify]`` and ``[tool.rentcheck.teardown]``, validated, then the CLI on top.

verify keys:

* ``nonfinite``: ``"fail"`` (default, NaN/Inf blocks) or ``"warn"`` (NaN/Inf and a skipped
  scan are reported as warnings that never block the gate or the marker);
* ``max_header_bytes``: the safetensors header cap (default 8 MiB; the reference reader allows
  100 MB), an integer or a size such as ``"16MiB"``;
* ``jobs``: files read at once (default: min(4, CPUs));
* ``deep``: also load each checkpoint with torch (weights_only) / safetensors;
* ``allow_globals``: extra pickle globals to accept, e.g. ``["mypkg.config.TrainConfig"]``;
* ``presets``: named allow-lists of exactly what a framework writes: ``hf-trainer``,
  ``accelerate``, ``lightning``, ``numpy-rng``, ``omegaconf`` (an OmegaConf/Hydra
  ``DictConfig``/``ListConfig``, as Lightning saves a Hydra run's hyperparameters; see
  ``formats/policy.py`` and docs/verify-formats.md);
* ``file_policies``: per-file policies by glob, e.g.
  ``{"**/training_args.bin" = {full_pickle = true, allow_globals = [...]}}`` (keys
  ``allow_globals``, ``presets``, ``full_pickle``);
* ``nonfinite_paths``: NaN/Inf policy by tensor path, globs to ``"fail"`` or ``"note"``, before
  the defaults (``callbacks.*`` and ``loops.*`` are notes, everything else fails).

teardown keys: ``profile`` (the platform profile whose meter-stop action is shown) and
``meter_stop`` (the action in your own words, for a platform without a profile).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rentcheck.config import Config, check_section_keys, section_error
from rentcheck.pull.formats.policy import NONFINITE_ACTIONS, PRESETS, FilePolicy, VerifyPolicy
from rentcheck.pull.formats.safetensors import MAX_HEADER_BYTES
from rentcheck.pull.rules import FINITE_SCAN_SKIPPED, NON_FINITE_TENSOR

__all__ = [
    "NONFINITE_CHOICES",
    "TeardownSettings",
    "VerifySettings",
    "teardown_settings",
    "verify_settings",
]

NONFINITE_CHOICES = ("fail", "warn")
VERIFY_KEYS = (
    "nonfinite",
    "max_header_bytes",
    "jobs",
    "deep",
    "allow_globals",
    "presets",
    "file_policies",
    "nonfinite_paths",
)
_FILE_POLICY_KEYS = ("allow_globals", "presets", "full_pickle")
TEARDOWN_KEYS = ("profile", "meter_stop")
# A header larger than this is no checkpoint anyone wrote; the cap only bounds memory.
MAX_HEADER_CEILING = 1 << 30


@dataclass(frozen=True)
class VerifySettings:
    nonfinite: str = "fail"
    max_header_bytes: int = MAX_HEADER_BYTES
    jobs: int | None = None
    deep: bool = False
    allow_globals: tuple[str, ...] = ()
    presets: tuple[str, ...] = ()
    file_policies: tuple[FilePolicy, ...] = ()
    nonfinite_paths: tuple[tuple[str, str], ...] = ()

    def verify_policy(self) -> VerifyPolicy:
        """The allow-list, per-file policies and NaN/Inf path policy the files are judged by."""
        return VerifyPolicy.build(
            allow_globals=self.allow_globals,
            presets=self.presets,
            files=self.file_policies,
            nonfinite_paths=dict(self.nonfinite_paths),
        )

    @property
    def advisory(self) -> frozenset[str]:
        """Codes reported as warnings that never block (the NaN/Inf scan under "warn")."""
        if self.nonfinite == "warn":
            return frozenset({NON_FINITE_TENSOR, FINITE_SCAN_SKIPPED})
        return frozenset()

    def policy(self) -> dict[str, Any]:
        """What the marker and the JSON report record about how the pull was judged."""
        return {
            "nonfinite": self.nonfinite,
            "max_header_bytes": self.max_header_bytes,
            "allow_globals": list(self.allow_globals),
            "presets": list(self.presets),
            "file_policies": [dataclasses.asdict(p) for p in self.file_policies],
            "nonfinite_paths": dict(self.nonfinite_paths),
        }


@dataclass(frozen=True)
class TeardownSettings:
    profile: str | None = None
    meter_stop: str | None = None


def _size(config: Config, key: str, value: Any) -> int:
    from rentcheck.box.settings import parse_size

    try:
        size = parse_size(value)
    except ValueError as exc:
        raise section_error(config, "verify", key, str(exc), hint='e.g. "16MiB"') from None
    if not 8 <= size <= MAX_HEADER_CEILING:
        raise section_error(config, "verify", key, f"must be between 8 bytes and 1 GiB, not {size}")
    return size


def _globals(config: Config, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, str) and "." in v.strip(". ") for v in value
    ):
        raise section_error(
            config, "verify", key, "must be a list of dotted names",
            hint='e.g. ["mypkg.config.TrainConfig"]',
        )  # fmt: skip
    return tuple(value)


def _presets(config: Config, key: str, value: Any) -> tuple[str, ...]:
    names = ", ".join(PRESETS)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise section_error(config, "verify", key, "must be a list of preset names", hint=names)
    for name in value:
        if name not in PRESETS:
            raise section_error(config, "verify", key, f"unknown preset {name!r}", hint=names)
    return tuple(value)


def _file_policies(config: Config, value: Any) -> tuple[FilePolicy, ...]:
    key = "file_policies"
    if not isinstance(value, dict):
        raise section_error(
            config, "verify", key, "must map globs to policies",
            hint='e.g. {"**/training_args.bin" = {full_pickle = true, allow_globals = [...]}}',
        )  # fmt: skip
    out: list[FilePolicy] = []
    for glob, table in value.items():
        where = f"{key}.{glob}"
        if not isinstance(table, dict) or set(table) - set(_FILE_POLICY_KEYS):
            raise section_error(
                config,
                "verify",
                where,
                "must be a table",
                hint="keys: " + ", ".join(_FILE_POLICY_KEYS),
            )
        allowed = list(_globals(config, where, table.get("allow_globals", [])))
        for name in _presets(config, where, table.get("presets", [])):
            allowed += PRESETS[name].allow_globals
        full = table.get("full_pickle", False)
        if not isinstance(full, bool):
            raise section_error(config, "verify", f"{where}.full_pickle", "must be true or false")
        out.append(FilePolicy(str(glob), tuple(allowed), full))
    return tuple(out)


def verify_settings(config: Config, **overrides: Any) -> VerifySettings:
    """The section's values, then the command line's (``None`` means not given)."""
    table = check_section_keys(config, "verify", VERIFY_KEYS)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "nonfinite":
            if value not in NONFINITE_CHOICES:
                raise section_error(
                    config, "verify", key, f"is {value!r}", hint='use "fail" or "warn"'
                )
            values[key] = value
        elif key == "max_header_bytes":
            values[key] = _size(config, key, value)
        elif key == "jobs":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise section_error(config, "verify", key, "must be a whole number >= 1")
            values[key] = value
        elif key == "deep":
            if not isinstance(value, bool):
                raise section_error(config, "verify", key, "must be true or false")
            values[key] = value
        elif key == "presets":
            values[key] = _presets(config, key, value)
        elif key == "file_policies":
            values[key] = _file_policies(config, value)
        elif key == "nonfinite_paths":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and v in NONFINITE_ACTIONS for k, v in value.items()
            ):
                raise section_error(
                    config, "verify", key, "must map tensor-path globs to \"fail\" or \"note\"",
                    hint='e.g. {"ema.*" = "note"}',
                )  # fmt: skip
            values[key] = tuple(value.items())
        else:  # allow_globals
            values[key] = _globals(config, key, value)
    settings = VerifySettings(**values)
    given = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(settings, **given) if given else settings


def teardown_settings(
    config: Config, overrides: Mapping[str, Any] | None = None
) -> TeardownSettings:
    table = check_section_keys(config, "teardown", TEARDOWN_KEYS)
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip():
            raise section_error(config, "teardown", key, "must be a non-empty string")
    settings = TeardownSettings(**dict(table))
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    return dataclasses.replace(settings, **given) if given else settings

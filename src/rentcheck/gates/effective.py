"""Every gate section's effective values, defaults included, each with where it came from
(``rentcheck config``)."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

from rentcheck.config import JUDGEMENT_KEYS, Config
from rentcheck.errors import RentcheckError
from rentcheck.gates.table import Gate, all_gates

__all__ = ["effective_sections"]


def effective_sections(config: Config) -> dict[str, dict[str, Any]]:
    """``{section: {"values": {key: {"value", "origin"}}, "problem": str | None}}``."""
    found: dict[str, dict[str, Any]] = {}
    for gate in all_gates():
        if gate.section is None or gate.section in found:
            continue
        table = config.section(gate.section)
        where = _where(config)
        values: dict[str, Any] = {}
        problem = None
        try:
            resolved = _resolved(gate, config)
        except RentcheckError as exc:
            resolved, problem = {}, str(exc)
        for key, value in resolved.items():
            given = _given(table, key)
            values[key] = {"value": _plain(value), "origin": where if given else "default"}
        for key in (*JUDGEMENT_KEYS, *gate.section_keys):
            if key in table:
                values[key] = {"value": _plain(table[key]), "origin": where}
            elif key in gate.section_keys:
                values[key] = {"value": _default_of(gate, key), "origin": "default"}
        for key, value in table.items():  # what the file says that the gate resolved away
            if key.replace("-", "_") not in values:
                values.setdefault(key, {"value": _plain(value), "origin": where})
        for key, origin in config.origins.items():
            section, _, name = key.partition(".")
            if section == gate.section and name in values:
                values[name]["origin"] = origin
        found[gate.section] = {"gates": [gate.name], "values": values, "problem": problem}
        for other in all_gates():
            if other.section == gate.section and other.name != gate.name:
                found[gate.section]["gates"].append(other.name)
    return found


def _resolved(gate: Gate, config: Config) -> Mapping[str, Any]:
    if gate.settings is None:
        return {}
    module, _, function = gate.settings.partition(":")
    settings = getattr(importlib.import_module(module), function)(config)
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return dict(settings)


def _given(table: Mapping[str, Any], attribute: str) -> bool:
    return any(k in table for k in (attribute, attribute.replace("_", "-")))


def _default_of(gate: Gate, key: str) -> Any:
    for requirement in gate.requires:
        if requirement.max_age_key == key:
            return requirement.default_age
    return None


def _where(config: Config) -> str:
    if config.source is None:
        return "default"
    return (
        f"[tool.rentcheck] of {config.source}" if config.source.endswith(".toml") else config.source
    )


def _plain(value: Any) -> Any:
    """A JSON-friendly form: tuples and sets as lists, patterns as their text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if hasattr(value, "pattern"):
        return value.pattern
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)

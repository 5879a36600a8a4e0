"""Frontmatter validation in plain Python, so the runtime needs no jsonschema.

``resources/profile.schema.json`` documents the same rules for other tools; a test checks
that this validator and the schema agree on every shipped profile and on broken fixtures.
The cross-field rules JSON Schema cannot express (``cross_field=True``) are checked here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.profiles.model import METER_STOP_VERBS, PROFILE_KINDS, MeterStop

__all__ = ["Problem", "validate_frontmatter"]

Path = tuple[str | int, ...]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_AFTER_RE = re.compile(r"^[1-9][0-9]*[smhdw]$")
_URL_RE = re.compile(r"^https?://[^\s]+$")
_MONTH_RE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_TOP_KEYS = (
    "platform",
    "kind",
    "meter_stop",
    "tiers",
    "durable_tier",
    "scratch_tier",
    "spot",
    "detach",
    "danger_clocks",
    "china_mirror_needed",
    "sources",
)
_TIER_KEYS = (
    "name",
    "paths",
    "survives_stop",
    "survives_meter_stop",
    "shared",
    "region_locked",
    "billed_while_stopped",
    "inode_cap",
)


@dataclass(frozen=True)
class Problem:
    path: Path
    message: str
    cross_field: bool = False  # a rule the JSON schema cannot express

    @property
    def where(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out or "frontmatter"


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: Path, message: str, *, cross: bool = False) -> None:
        self.problems.append(Problem(path, message, cross))

    def mapping(
        self, value: Any, path: Path, keys: Sequence[str], required: Sequence[str]
    ) -> Mapping[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, not {_kind(value)}")
            return None
        for key in value:
            if key not in keys:
                self.fail((*path, str(key)), "unknown key (allowed: " + ", ".join(keys) + ")")
        for key in required:
            if key not in value:
                self.fail((*path, key), "required key is missing")
        return value

    def nullable_bool(self, value: Any, path: Path) -> None:
        if value is not None and not isinstance(value, bool):
            self.fail(path, f"must be true, false or null, not {_kind(value)}")

    def name(self, value: Any, path: Path, *, nullable: bool = False) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or not _NAME_RE.match(value):
            self.fail(path, f"must be a lowercase name like 'data-disk', not {_show(value)}")

    def unique_list(self, value: Any, path: Path) -> list[Any] | None:
        if not isinstance(value, list):
            self.fail(path, f"must be a list, not {_kind(value)}")
            return None
        for index, item in enumerate(value):
            if item in value[:index]:
                self.fail(path, f"{_show(item)} is listed twice (item {index})")
        return value

    def count(self, value: Any, path: Path) -> None:
        if value is None or (_is_int(value) and value >= 0):
            return
        self.fail(path, f"must be a whole number >= 0 or null, not {_show(value)}")


def _is_int(value: Any) -> bool:
    # JSON Schema's "integer" is a number with no fraction, and never a boolean.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _kind(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", list: "a list", dict: "a mapping"}
    if value is None:
        return "null"
    return names.get(type(value), f"a {type(value).__name__}") + f" ({_show(value)})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_frontmatter(data: Any, stem: str | None = None) -> list[Problem]:
    """Every way ``data`` breaks the profile schema; empty when it is a valid profile.
    ``stem`` is the file name without ``.md``, which ``platform`` must equal."""
    check = _Checker()
    top = check.mapping(data, (), _TOP_KEYS, _TOP_KEYS)
    if top is None:
        return check.problems
    if "platform" in top:
        check.name(top["platform"], ("platform",))
        if stem is not None and top["platform"] != stem:
            message = f"is {_show(top['platform'])} but the file is {stem}.md; they must match"
            check.fail(("platform",), message, cross=True)
    if "kind" in top and top["kind"] not in PROFILE_KINDS:
        check.fail(("kind",), f"{_show(top['kind'])} is not one of: " + ", ".join(PROFILE_KINDS))
    tiers = _tiers(check, top.get("tiers"), "tiers" in top)
    meter = _meter_stop(check, top.get("meter_stop"), "meter_stop" in top)
    for key in ("durable_tier", "scratch_tier"):
        if key in top:
            check.name(top[key], (key,), nullable=True)
    if "spot" in top:
        spot_keys = ("available", "grace_seconds")
        spot = check.mapping(top["spot"], ("spot",), spot_keys, spot_keys)
        if spot is not None:
            check.nullable_bool(spot.get("available"), ("spot", "available"))
            check.count(spot.get("grace_seconds"), ("spot", "grace_seconds"))
    if "detach" in top:
        detach = check.unique_list(top["detach"], ("detach",))
        for index, tool in enumerate(detach or []):
            check.name(tool, ("detach", index))
    if "danger_clocks" in top:
        _danger_clocks(check, top["danger_clocks"])
    if "china_mirror_needed" in top:
        check.nullable_bool(top["china_mirror_needed"], ("china_mirror_needed",))
    if "sources" in top:
        _sources(check, top["sources"])
    if tiers is not None and meter is not None:
        _cross_fields(check, top, tiers, meter)
    return check.problems


def _tiers(check: _Checker, value: Any, present: bool) -> list[Mapping[str, Any]] | None:
    if not present:
        return None
    if not isinstance(value, list):
        check.fail(("tiers",), f"must be a list, not {_kind(value)}")
        return None
    if not value:
        check.fail(("tiers",), "must list at least one tier")
    good = []
    for index, raw in enumerate(value):
        path: Path = ("tiers", index)
        tier = check.mapping(raw, path, _TIER_KEYS, _TIER_KEYS)
        if tier is None:
            continue
        good.append(tier)
        if "name" in tier:
            check.name(tier["name"], (*path, "name"))
        if "paths" in tier:
            paths = check.unique_list(tier["paths"], (*path, "paths"))
            for number, item in enumerate(paths or []):
                if not isinstance(item, str) or not item:
                    check.fail((*path, "paths", number), "must be a non-empty string")
        for key in _TIER_KEYS[2:7]:
            if key in tier:
                check.nullable_bool(tier[key], (*path, key))
        if "inode_cap" in tier:
            check.count(tier["inode_cap"], (*path, "inode_cap"))
    return good


def _meter_stop(check: _Checker, value: Any, present: bool) -> Mapping[str, Any] | None:
    if not present:
        return None
    keys = ("action", "irreversible", "destroys", "keeps")
    meter = check.mapping(value, ("meter_stop",), keys, keys)
    if meter is None:
        return None
    action = meter.get("action")
    if "action" in meter and (not isinstance(action, str) or not 1 <= len(action) <= 80):
        message = f"must be a string of 1-80 characters, not {_kind(action)}"
        check.fail(("meter_stop", "action"), message)
    elif isinstance(action, str):
        verb = MeterStop(action, None, (), ()).verb
        if verb not in METER_STOP_VERBS:
            message = f"must start with one of: {', '.join(METER_STOP_VERBS)} (got {verb!r})"
            check.fail(("meter_stop", "action"), message, cross=True)
    if "irreversible" in meter:
        check.nullable_bool(meter["irreversible"], ("meter_stop", "irreversible"))
    for key in ("destroys", "keeps"):
        if key in meter:
            names = check.unique_list(meter[key], ("meter_stop", key))
            for index, name in enumerate(names or []):
                check.name(name, ("meter_stop", key, index))
    return meter


def _danger_clocks(check: _Checker, value: Any) -> None:
    if not isinstance(value, list):
        check.fail(("danger_clocks",), f"must be a list, not {_kind(value)}")
        return
    for index, raw in enumerate(value):
        path: Path = ("danger_clocks", index)
        clock = check.mapping(raw, path, ("what", "after", "deletes"), ("what", "after"))
        if clock is None:
            continue
        what = clock.get("what")
        if "what" in clock and (not isinstance(what, str) or not what):
            check.fail((*path, "what"), "must be a non-empty string")
        after = clock.get("after")
        if after is not None and (not isinstance(after, str) or not _AFTER_RE.match(after)):
            message = f"must be a duration like '15d', '90m' or '12h', or null, not {_show(after)}"
            check.fail((*path, "after"), message)
        if "deletes" in clock:
            for spot, name in enumerate(
                check.unique_list(clock["deletes"], (*path, "deletes")) or []
            ):
                check.name(name, (*path, "deletes", spot))


def _sources(check: _Checker, value: Any) -> None:
    sources = check.unique_list(value, ("sources",))
    for index, raw in enumerate(sources or []):
        path: Path = ("sources", index)
        source = check.mapping(raw, path, ("url", "verified"), ("url", "verified"))
        if source is None:
            continue
        url = source.get("url")
        if "url" in source and (not isinstance(url, str) or not _URL_RE.match(url)):
            check.fail((*path, "url"), f"must be an http(s) URL, not {_show(url)}")
        month = source.get("verified")
        if "verified" in source and (not isinstance(month, str) or not _MONTH_RE.match(month)):
            message = f"must be a month written YYYY-MM (quoted), not {_show(month)}"
            check.fail((*path, "verified"), message)


def _cross_fields(
    check: _Checker,
    top: Mapping[str, Any],
    tiers: list[Mapping[str, Any]],
    meter: Mapping[str, Any],
) -> None:
    by_name: dict[str, Mapping[str, Any]] = {}
    for index, tier in enumerate(tiers):
        name = tier.get("name")
        if isinstance(name, str):
            if name in by_name:
                check.fail(("tiers", index, "name"), f"tier {name!r} is defined twice", cross=True)
            by_name[name] = tier
    lists = {key: meter.get(key) for key in ("destroys", "keeps")}
    for key, names in lists.items():
        for index, name in enumerate(names if isinstance(names, list) else []):
            if isinstance(name, str) and name not in by_name:
                check.fail(("meter_stop", key, index), f"{name!r} is not a tier", cross=True)
    clocks = top.get("danger_clocks")
    for index, clock in enumerate(clocks if isinstance(clocks, list) else []):
        deleted = clock.get("deletes") if isinstance(clock, Mapping) else None
        for spot, name in enumerate(deleted if isinstance(deleted, list) else []):
            if isinstance(name, str) and name not in by_name:
                where: Path = ("danger_clocks", index, "deletes", spot)
                check.fail(where, f"{name!r} is not a tier", cross=True)
    destroys = set(lists["destroys"]) if isinstance(lists["destroys"], list) else set()
    keeps = set(lists["keeps"]) if isinstance(lists["keeps"], list) else set()
    for index, tier in enumerate(tiers):
        name, survives = tier.get("name"), tier.get("survives_meter_stop")
        path: Path = ("tiers", index, "survives_meter_stop")
        if name in destroys and name in keeps:
            check.fail(path, f"{name!r} is in both meter_stop.destroys and keeps", cross=True)
        elif survives is False and name not in destroys:
            message = f"is false, so meter_stop.destroys must list {name!r}"
            check.fail(path, message, cross=True)
        elif survives is True and name not in keeps:
            check.fail(path, f"is true, so meter_stop.keeps must list {name!r}", cross=True)
        elif survives is None and (name in destroys or name in keeps):
            which = "destroys" if name in destroys else "keeps"
            message = f"is null, but meter_stop.{which} lists {name!r}; say true or false"
            check.fail(path, message, cross=True)
    for key in ("durable_tier", "scratch_tier"):
        name = top.get(key)
        if isinstance(name, str) and name not in by_name:
            check.fail((key,), f"{name!r} is not one of the tiers", cross=True)
    durable = by_name.get(top.get("durable_tier") or "")
    if durable is not None and durable.get("survives_meter_stop") is False:
        message = "names a tier that the meter-stop action destroys; it cannot be durable"
        check.fail(("durable_tier",), message, cross=True)

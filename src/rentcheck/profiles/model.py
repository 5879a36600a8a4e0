"""A platform profile as data: what the meter-stop action does to each storage tier.

This is the API the audit and teardown gates use::

    profile = load_profile("runpod", config)
    profile.meter_stop.action              # "terminate"
    profile.durable_tier                   # Tier(name="network-volume", ...)
    profile.destroyed_by_meter_stop("/workspace/ckpt")   # None: two tiers share /workspace
    profile.meter_stop_warning()           # the sentence to show before the person approves

``None`` always means "not known": the profile says ``null`` for it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "METER_STOP_VERBS",
    "PROFILE_KINDS",
    "DangerClock",
    "MeterStop",
    "Profile",
    "Source",
    "Spot",
    "Tier",
    "build_profile",
    "meter_stop_warning",
]

PROFILE_KINDS = ("ssh-rental", "cloud-api", "slurm", "kubernetes", "notebook", "workstation")
# The English verb that starts meter_stop.action; the teardown gate speaks in these words.
METER_STOP_VERBS = (
    "shutdown",
    "stop",
    "terminate",
    "destroy",
    "release",
    "return",
    "delete",
    "manual",
    "automatic",
    "none",
)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class Tier:
    """One storage tier and its survival matrix row."""

    name: str
    paths: tuple[str, ...]
    survives_stop: bool | None
    survives_meter_stop: bool | None
    shared: bool | None
    region_locked: bool | None
    billed_while_stopped: bool | None
    inode_cap: int | None

    def mounts(self, home: str | None = None) -> tuple[tuple[str | None, ...], ...]:
        """The tier's paths as component tuples, ``None`` for a placeholder component
        (``/lambda/nfs/<name>`` matches any one name there). Paths that cannot be compared
        with a real path (``<bucket>``, ``$TMPDIR``; ``~``/``$HOME`` without ``home``) are
        left out."""
        out = []
        for written in self.paths:
            path = written
            if home is not None:
                if path == "~" or path.startswith("~/"):
                    path = home + path[1:]
                path = path.replace("$HOME", home)
            if not path.startswith("/") or "$" in path:
                continue
            parts = [p for p in posixpath.normpath(path).split("/") if p]
            if any("<" in p and not (p.startswith("<") and p.endswith(">")) for p in parts):
                continue  # a placeholder inside a component: too vague to match
            out.append(tuple(None if p.startswith("<") else p for p in parts))
        return tuple(out)


@dataclass(frozen=True)
class MeterStop:
    """The one action that stops the compute meter, and what it does to the tiers."""

    action: str
    irreversible: bool | None
    destroys: tuple[str, ...]
    keeps: tuple[str, ...]

    @property
    def verb(self) -> str:
        """The English verb the action starts with (``shutdown``, ``terminate`` ...)."""
        words = re.findall(r"[a-z]+", self.action.lower())
        return words[0] if words else ""


@dataclass(frozen=True)
class Spot:
    available: bool | None
    grace_seconds: int | None


@dataclass(frozen=True)
class DangerClock:
    what: str
    after: str | None  # "<n><s|m|h|d|w>", None when not a fixed duration
    deletes: tuple[str, ...] = ()  # the tiers it deletes when it fires (the audit's RC304)

    @property
    def after_seconds(self) -> int | None:
        if self.after is None:
            return None
        return int(self.after[:-1]) * _UNITS[self.after[-1]]


@dataclass(frozen=True)
class Source:
    url: str
    verified: str  # YYYY-MM


@dataclass(frozen=True)
class Profile:
    platform: str
    kind: str
    meter_stop: MeterStop
    tiers: tuple[Tier, ...]
    durable_tier_name: str | None
    scratch_tier_name: str | None
    spot: Spot
    detach: tuple[str, ...]
    danger_clocks: tuple[DangerClock, ...]
    china_mirror_needed: bool | None
    sources: tuple[Source, ...]
    path: str = ""  # the file it was read from
    shipped: bool = False  # one of rentcheck's own profiles (not a user override)

    def tier(self, name: str) -> Tier | None:
        return next((t for t in self.tiers if t.name == name), None)

    @property
    def durable_tier(self) -> Tier | None:
        """Where checkpoints must be before teardown; None when no tier outlives the meter."""
        return self.tier(self.durable_tier_name) if self.durable_tier_name else None

    @property
    def scratch_tier(self) -> Tier | None:
        return self.tier(self.scratch_tier_name) if self.scratch_tier_name else None

    @property
    def destroyed_tiers(self) -> tuple[Tier, ...]:
        """The tiers whose data the meter-stop action deletes."""
        return tuple(t for t in self.tiers if t.name in self.meter_stop.destroys)

    def tiers_for_path(self, path: str, home: str | None = None) -> tuple[Tier, ...]:
        """The tiers a path may live on: those with the longest mount prefix of ``path``.

        More than one tier is returned when tiers share a mount point (RunPod's
        ``/workspace`` is the volume disk or a Network Volume); then only the box's mount
        table can tell which one it is.
        """
        if home is not None and (path == "~" or path.startswith("~/")):
            path = home + path[1:]
        if not path.startswith("/"):
            return ()
        target = [p for p in posixpath.normpath(path).split("/") if p]
        best = -1
        found: list[Tier] = []
        for tier in self.tiers:
            for mount in tier.mounts(home):
                inside = len(mount) <= len(target) and all(
                    part is None or part == target[i] for i, part in enumerate(mount)
                )
                if not inside:
                    continue
                if len(mount) > best:
                    best, found = len(mount), [tier]
                elif len(mount) == best and tier not in found:
                    found.append(tier)
        return tuple(found)

    def destroyed_by_meter_stop(self, path: str, home: str | None = None) -> bool | None:
        """True when the meter-stop action deletes ``path``; False when it keeps it; None
        when the path matches no tier, tiers that disagree, or a tier whose fate is unknown."""
        verdicts = {t.survives_meter_stop for t in self.tiers_for_path(path, home)}
        if len(verdicts) != 1:
            return None
        (survives,) = verdicts
        return None if survives is None else not survives

    def meter_stop_warning(self) -> str:
        """The meter-stop action and what it destroys, in plain words."""
        return meter_stop_warning(self)

    def to_dict(self) -> dict[str, Any]:
        """The frontmatter as data (the same keys the file uses)."""
        return {
            "platform": self.platform,
            "kind": self.kind,
            "meter_stop": {
                "action": self.meter_stop.action,
                "verb": self.meter_stop.verb,
                "irreversible": self.meter_stop.irreversible,
                "destroys": list(self.meter_stop.destroys),
                "keeps": list(self.meter_stop.keeps),
            },
            "tiers": [
                {
                    "name": t.name,
                    "paths": list(t.paths),
                    "survives_stop": t.survives_stop,
                    "survives_meter_stop": t.survives_meter_stop,
                    "shared": t.shared,
                    "region_locked": t.region_locked,
                    "billed_while_stopped": t.billed_while_stopped,
                    "inode_cap": t.inode_cap,
                }
                for t in self.tiers
            ],
            "durable_tier": self.durable_tier_name,
            "scratch_tier": self.scratch_tier_name,
            "spot": {"available": self.spot.available, "grace_seconds": self.spot.grace_seconds},
            "detach": list(self.detach),
            "danger_clocks": [
                {"what": c.what, "after": c.after, "deletes": list(c.deletes)}
                for c in self.danger_clocks
            ],
            "china_mirror_needed": self.china_mirror_needed,
            "sources": [{"url": s.url, "verified": s.verified} for s in self.sources],
        }


def build_profile(data: Mapping[str, Any], path: str = "", shipped: bool = False) -> Profile:
    """A Profile from frontmatter that ``validate_frontmatter`` accepted."""
    meter = data["meter_stop"]
    return Profile(
        platform=data["platform"],
        kind=data["kind"],
        meter_stop=MeterStop(
            action=meter["action"],
            irreversible=meter["irreversible"],
            destroys=tuple(meter["destroys"]),
            keeps=tuple(meter["keeps"]),
        ),
        tiers=tuple(
            Tier(
                name=t["name"],
                paths=tuple(t["paths"]),
                survives_stop=t["survives_stop"],
                survives_meter_stop=t["survives_meter_stop"],
                shared=t["shared"],
                region_locked=t["region_locked"],
                billed_while_stopped=t["billed_while_stopped"],
                inode_cap=None if t["inode_cap"] is None else int(t["inode_cap"]),
            )
            for t in data["tiers"]
        ),
        durable_tier_name=data["durable_tier"],
        scratch_tier_name=data["scratch_tier"],
        spot=Spot(
            available=data["spot"]["available"],
            grace_seconds=(
                None
                if data["spot"]["grace_seconds"] is None
                else int(data["spot"]["grace_seconds"])
            ),
        ),
        detach=tuple(data["detach"]),
        danger_clocks=tuple(
            DangerClock(c["what"], c["after"], tuple(c.get("deletes") or ()))
            for c in data["danger_clocks"]
        ),
        china_mirror_needed=data["china_mirror_needed"],
        sources=tuple(Source(s["url"], s["verified"]) for s in data["sources"]),
        path=path,
        shipped=shipped,
    )


def _tier_words(tiers: Sequence[Tier]) -> str:
    return "; ".join(f"{t.name} ({', '.join(t.paths) or 'no path'})" for t in tiers)


def meter_stop_warning(profile: Profile) -> str:
    """What stopping the meter does on this platform, said so a tired person gets it."""
    meter = profile.meter_stop
    verb = meter.verb
    if verb == "none":
        opening = f"On {profile.platform} there is no meter to stop ({meter.action})."
    elif verb == "automatic":
        opening = f"On {profile.platform} the meter stops by itself: {meter.action}."
    elif verb == "manual":
        opening = f"On {profile.platform} the meter stops only when you act: {meter.action}."
    else:
        opening = f"The action that stops the meter on {profile.platform} is: {meter.action}."
    parts = [opening]
    if meter.irreversible is True:
        parts.append("It cannot be undone.")
    elif meter.irreversible is False:
        parts.append("It can be undone (the instance can be started again).")
    destroyed = profile.destroyed_tiers
    kept = tuple(t for t in profile.tiers if t.name in meter.keeps)
    unknown = tuple(t for t in profile.tiers if t.survives_meter_stop is None)
    if destroyed:
        parts.append(f"It DELETES everything on: {_tier_words(destroyed)}.")
    else:
        parts.append("It deletes no storage tier.")
    if kept:
        parts.append(f"It keeps: {_tier_words(kept)}.")
    if unknown:
        parts.append(f"Unknown fate (treat as deleted): {_tier_words(unknown)}.")
    durable = profile.durable_tier
    if durable is not None:
        parts.append(
            f"Checkpoints and results must be on {durable.name} "
            f"({', '.join(durable.paths) or 'see the profile'}) or pulled and verified before it."
        )
    else:
        parts.append("No tier outlives it: pull every result and verify the pull before you do it.")
    clocks = [c for c in profile.danger_clocks if c.after is not None]
    if clocks:
        parts.append(
            "Clocks that act on their own: "
            + "; ".join(f"after {c.after}, {c.what}" for c in clocks)
            + "."
        )
    return " ".join(parts)

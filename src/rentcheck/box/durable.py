"""RC304: is the checkpoint/durable path on a tier that survives the meter-stop action?

With a platform profile the answer comes from its survival matrix (tiers and what the
meter-stop action destroys). Until profiles exist the config names the durable mounts; with
neither, a durable path on the root filesystem is flagged as a warning.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.box.findings import dig, finding
from rentcheck.box.settings import AuditSettings
from rentcheck.model import Finding, Severity

__all__ = ["DURABLE_ROLES", "ProfileView", "Tier", "durable_findings", "profile_view"]

DURABLE_ROLES = ("checkpoint", "durable")


@dataclass(frozen=True)
class Tier:
    name: str
    paths: tuple[str, ...]
    survives_meter_stop: bool | None


@dataclass(frozen=True)
class Clock:
    """A profile's danger clock that deletes tiers on its own (autodl: 15 days after 关机)."""

    what: str
    after: str | None
    deletes: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.what}" + (f" (after {self.after})" if self.after else "")


@dataclass(frozen=True)
class ProfileView:
    """What the audit needs from a platform profile, whatever shape the profile object has."""

    name: str
    meter_stop_action: str
    tiers: tuple[Tier, ...]
    destroys: tuple[str, ...] = ()
    source: Any = None  # the loaded profile, when it can place paths itself
    clocks: tuple[Clock, ...] = ()  # danger clocks that delete tiers: they count as destroying

    def tiers_for(self, realpath: str, home: str | None) -> tuple[Tier, ...]:
        """The tiers a path may be on: the longest matching tier path wins (ties: several)."""
        place = getattr(self.source, "tiers_for_path", None)
        if callable(place):
            names = {str(_get(t, "name")) for t in place(realpath, home)}
            return tuple(t for t in self.tiers if t.name in names)
        best, found = -1, []
        for tier in self.tiers:
            for written in tier.paths:
                prefix = _concrete(written, home)
                if prefix is None:
                    continue
                if prefix in ("/", realpath) or realpath.startswith(prefix + "/"):
                    if len(prefix) > best:
                        best, found = len(prefix), [tier]
                    elif len(prefix) == best and tier not in found:
                        found.append(tier)
        return tuple(found)

    def survives(self, tier: Tier) -> bool | None:
        if tier.name in self.destroys or self.clock_for(tier) is not None:
            return False
        return tier.survives_meter_stop

    def clock_for(self, tier: Tier) -> Clock | None:
        """The danger clock that deletes ``tier`` (None: no clock does)."""
        return next((c for c in self.clocks if tier.name in c.deletes), None)

    def why_lost(self, tiers: Sequence[Tier]) -> str:
        """What destroys these tiers, in words: the meter-stop action and/or a danger clock."""
        action = f"`{self.meter_stop_action}`"
        by_action = [t for t in tiers if t.name in self.destroys or t.survives_meter_stop is False]
        clocks = dict.fromkeys(c for t in tiers if (c := self.clock_for(t)) is not None)
        parts = [f"which {action} destroys"] if by_action else []
        if clocks:
            kept = "" if by_action else f"which {action} keeps, but "
            parts.append(
                f'{kept}the danger clock "{"; ".join(c.describe() for c in clocks)}" deletes it'
            )
        return " and ".join(parts) if parts else f"which {action} destroys"


def _concrete(written: str, home: str | None) -> str | None:
    path = written
    if home is not None:
        if path == "~" or path.startswith("~/"):
            path = home + path[1:]
        path = path.replace("$HOME", home)
    if not path.startswith("/") or "<" in path or "$" in path:
        return None  # a placeholder (<bucket>, $TMPDIR): cannot be compared with a real path
    return posixpath.normpath(path)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def profile_view(profile: Any, requested: str) -> ProfileView:
    """Adapt a loaded profile (rentcheck.profiles.Profile or a frontmatter mapping)."""
    meter = _get(profile, "meter_stop") or {}
    tiers = tuple(
        Tier(
            name=str(_get(t, "name")),
            paths=tuple(str(p) for p in _get(t, "paths", ()) or ()),
            survives_meter_stop=_get(t, "survives_meter_stop"),
        )
        for t in _get(profile, "tiers", ()) or ()
    )
    clocks = tuple(
        Clock(
            what=str(_get(c, "what")),
            after=None if _get(c, "after") is None else str(_get(c, "after")),
            deletes=tuple(str(n) for n in _get(c, "deletes", ()) or ()),
        )
        for c in _get(profile, "danger_clocks", ()) or ()
    )
    return ProfileView(
        name=str(_get(profile, "platform") or _get(profile, "name") or requested),
        meter_stop_action=str(_get(meter, "action") or "the meter-stop action"),
        tiers=tiers,
        destroys=tuple(str(n) for n in _get(meter, "destroys", ()) or ()),
        source=None if isinstance(profile, Mapping) else profile,
        clocks=tuple(c for c in clocks if c.deletes),
    )


def _under(path: str, mounts: Sequence[str]) -> bool:
    for mount in mounts:
        root = mount.rstrip("/") or "/"
        if root in ("/", path) or path.startswith(root + "/"):
            return True
    return False


def _judge_profile(
    label: str, real: str, *, on_root: bool, home: str | None, profile: ProfileView, host: str
) -> Finding | None:
    tiers = profile.tiers_for(real, home)
    verdicts = {profile.survives(t) for t in tiers}
    names = ", ".join(repr(t.name) for t in tiers)
    action = f"`{profile.meter_stop_action}`"
    root_tiers = profile.tiers_for("/", home)
    root_dies = bool(root_tiers) and {profile.survives(t) for t in root_tiers} == {False}
    if on_root and root_dies and not set(tiers) <= set(root_tiers):
        # The path names a durable tier, but that tier's mount is missing: the files really
        # land on the root filesystem.
        root_names = ", ".join(repr(t.name) for t in root_tiers)
        return finding(
            "RC304",
            f"{label} should be on tier {names}, but it is on the same mount as / (tier "
            f"{root_names}), {profile.why_lost(root_tiers)} on {profile.name}; is the mount "
            "missing?",
            host,
            tier=root_names,
        )
    if verdicts == {False}:
        return finding(
            "RC304",
            f"{label} is on tier {names}, {profile.why_lost(tiers)} on {profile.name}",
            host,
            tier=names,
        )
    if verdicts == {True}:
        return None
    why = (
        f"tiers {names} share that path and only some survive"
        if len(tiers) > 1
        else f"the {profile.name} profile knows no tier for it"
        if not tiers
        else f"tier {names} has no known fate"
    )
    return finding(
        "RC304",
        f"{label}: whether it survives {action} is unknown ({why})",
        host,
        Severity.WARNING,
    )


def _judge(
    *,
    role: str,
    fact: Mapping[str, Any],
    facts: Mapping[str, Any],
    settings: AuditSettings,
    profile: ProfileView | None,
    host: str,
) -> Finding | None:
    real = str(fact.get("realpath") or fact.get("path"))
    mount = dig(fact, "mount", "mount_point")
    root_mount = dig(facts, "root", "mount", "mount_id")
    on_root = root_mount is not None and dig(fact, "mount", "mount_id") == root_mount
    label = f"{role}={fact.get('path')}"
    if profile is not None:
        home = dig(facts, "host", "home")
        return _judge_profile(label, real, on_root=on_root, home=home, profile=profile, host=host)
    if settings.durable_mounts:
        durable = _under(real, settings.durable_mounts)
        if durable and not (on_root and "/" not in settings.durable_mounts):
            return None
        reason = (
            "is a plain directory on the root filesystem (the durable mount is missing?)"
            if durable
            else f"is on {mount}, not on a durable mount ({', '.join(settings.durable_mounts)})"
        )
        return finding("RC304", f"{label} {reason}", host, role=role, mount=mount)
    if on_root:
        return finding(
            "RC304",
            f"{label} is on the root filesystem, which many platforms destroy at the meter "
            "stop; name the durable mounts (durable_mounts) or pass --profile",
            host,
            Severity.WARNING,
            role=role,
        )
    return None


def durable_findings(
    facts: Mapping[str, Any], settings: AuditSettings, host: str, profile: ProfileView | None
) -> list[Finding]:
    found = []
    for role, fact in sorted((facts.get("paths") or {}).items()):
        if role in DURABLE_ROLES and isinstance(fact, Mapping):
            judged = _judge(
                role=role, fact=fact, facts=facts, settings=settings, profile=profile, host=host
            )
            if judged is not None:
                found.append(judged)
    return found

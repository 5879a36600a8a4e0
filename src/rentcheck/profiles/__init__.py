"""Platform profiles: checked data about what each rented-GPU platform does to your files.

The API the audit and teardown gates use (nothing here imports yaml until a profile is read)::

    from rentcheck.profiles import load_profile

    profile = load_profile("autodl", config)          # user profiles.paths first, then shipped
    profile.meter_stop.action, profile.meter_stop.irreversible, profile.meter_stop.destroys
    profile.durable_tier                               # Tier | None
    profile.tiers_for_path("/root/autodl-tmp/run")     # (Tier(name="data-disk", ...),)
    profile.destroyed_by_meter_stop("/root/autodl-tmp/run")   # True / False / None (unknown)
    profile.meter_stop_warning()                       # the plain-words sentence

Names are loaded on first use: the rule table imports ``rentcheck.profiles.rules`` on every
lint run, which must not pay for the loader and the markdown scanner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rentcheck.profiles.load import (
        ProfileEntry,
        available_profiles,
        load_profile,
        profile_dirs,
        shipped_profiles_dir,
    )
    from rentcheck.profiles.model import (
        METER_STOP_VERBS,
        DangerClock,
        MeterStop,
        Profile,
        Source,
        Spot,
        Tier,
    )

__all__ = [
    "METER_STOP_VERBS",
    "DangerClock",
    "MeterStop",
    "Profile",
    "ProfileEntry",
    "Source",
    "Spot",
    "Tier",
    "available_profiles",
    "load_profile",
    "profile_dirs",
    "shipped_profiles_dir",
]

_HOME = {
    "ProfileEntry": "load",
    "available_profiles": "load",
    "load_profile": "load",
    "profile_dirs": "load",
    "shipped_profiles_dir": "load",
    "METER_STOP_VERBS": "model",
    "DangerClock": "model",
    "MeterStop": "model",
    "Profile": "model",
    "Source": "model",
    "Spot": "model",
    "Tier": "model",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'rentcheck.profiles' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"rentcheck.profiles.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

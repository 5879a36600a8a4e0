"""Profiles in plain words: the meter-stop warning, the survival matrix, the listing."""

from __future__ import annotations

from collections.abc import Sequence

from rentcheck.profiles.model import Profile, Tier, meter_stop_warning

__all__ = ["meter_stop_warning", "render_profile", "survival_rows"]


def _yes_no(value: bool | None, yes: str = "yes", no: str = "no") -> str:
    return "unknown" if value is None else (yes if value else no)


def survival_rows(profile: Profile) -> list[list[str]]:
    header = [
        "tier",
        "paths",
        "after stop",
        f"after {profile.meter_stop.verb or 'meter stop'}",
        "shared",
        "region-locked",
        "billed stopped",
        "inode cap",
    ]
    rows = [header]
    for tier in profile.tiers:
        role = (
            " [durable]"
            if tier.name == profile.durable_tier_name
            else (" [scratch]" if tier.name == profile.scratch_tier_name else "")
        )
        rows.append(
            [
                tier.name + role,
                ", ".join(tier.paths) or "-",
                _yes_no(tier.survives_stop, "kept", "LOST"),
                _yes_no(tier.survives_meter_stop, "kept", "DELETED"),
                _yes_no(tier.shared),
                _yes_no(tier.region_locked),
                _yes_no(tier.billed_while_stopped),
                "-" if tier.inode_cap is None else f"{tier.inode_cap:,}",
            ]
        )
    return rows


def table(rows: Sequence[Sequence[str]]) -> str:
    """Rows under a dashed rule, padded by display width (关机 takes four cells, not two)."""
    from rentcheck.textwidth import display_width, ljust

    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(ljust(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def shared_mount_notes(profile: Profile) -> list[str]:
    """One line per mount point listed under more than one tier: why, and what it means."""
    verb = profile.meter_stop.verb or "the meter stop"
    by_path: dict[str, list[Tier]] = {}
    for tier in profile.tiers:
        for path in tier.paths:
            by_path.setdefault(path, []).append(tier)
    notes = []
    for path, tiers in by_path.items():
        if len(tiers) < 2:
            continue
        fates = ", ".join(
            f"{t.name}: {_yes_no(t.survives_meter_stop, 'kept', 'DELETED')}" for t in tiers
        )
        names = " and ".join(t.name for t in tiers)
        notes.append(
            f"  - {path} is the mount point of {names}: a box has only one of them there "
            f"(whichever was attached when it was created), and that one decides whether "
            f"files under {path} survive {verb} ({fates}). The path alone cannot tell, so "
            f"`rentcheck audit --profile {profile.platform}` warns (RC304) until the durable "
            "path is unambiguous; check the box's storage settings or its mount table "
            f"(`df {path}`)."
        )
    return notes


def render_profile(profile: Profile, origin: str) -> str:
    spot = profile.spot
    if spot.available is False:
        spot_text = "no spot / interruptible tier"
    else:
        grace = (
            "unknown"
            if spot.grace_seconds is None
            else ("no warning at all" if spot.grace_seconds == 0 else f"{spot.grace_seconds} s")
        )
        avail = "available" if spot.available else "availability unknown"
        spot_text = f"{avail}; warning before the kill: {grace}"
    shared = shared_mount_notes(profile)
    lines = [
        f"{profile.platform} ({profile.kind})  from {origin}",
        "",
        "Meter stop: " + meter_stop_warning(profile),
        "",
        "Survival matrix",
        table(survival_rows(profile)),
        *(["", "Shared mount points", *shared] if shared else []),
        "",
        f"Spot:     {spot_text}",
        f"Detach:   {', '.join(profile.detach) or 'none'}",
        "Mirrors:  "
        + _yes_no(profile.china_mirror_needed, "needed (behind the GFW)", "not needed"),
    ]
    if profile.danger_clocks:
        lines += ["", "Danger clocks"]
        lines += [f"  - after {c.after or '(not fixed)'}: {c.what}" for c in profile.danger_clocks]
    lines += ["", "Sources"]
    lines += [f"  - {s.url} (verified {s.verified})" for s in profile.sources] or ["  (none)"]
    return "\n".join(lines) + "\n"

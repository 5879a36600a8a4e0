"""Acceptance for the shipped profiles: they pass `rentcheck profiles check` and `rentcheck
stale --today 2026-11` as real processes, and every fact their frontmatter states agrees with
the platform facts in ../shared/facts/platforms.yaml where both state it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rentcheck.profiles import Profile, load_profile
from tests.conftest import REPO_ROOT, run_subprocess

THIS_MONTH = "2026-11"  # staleness tests always pin today; the weekly CI job uses the clock
FACTS = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "facts" / "platforms.yaml"
).resolve()
# The verbs whose action leaves the instance (and so its disks) in place: the tiers that
# outlive it are those that survive a stop. Every other verb ends the instance.
STOP_LIKE = ("shutdown", "stop", "none")


def test_shipped_profiles_pass_profiles_check() -> None:
    proc = run_subprocess("profiles", "check", "--output-format", "json", cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert document["summary"]["files_checked"] == 15 and document["results"] == []
    assert all(p["valid"] for p in document["profiles"])


def test_shipped_profiles_are_not_stale_this_month() -> None:
    proc = run_subprocess(
        "stale", "profiles", "--today", THIS_MONTH, "--output-format", "json", cwd=REPO_ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(proc.stdout)
    assert document["staleness"]["today"] == THIS_MONTH
    assert document["results"] == []
    counts = document["staleness"]["counts"]
    assert counts["fresh"] > 150 and set(counts) <= {"fresh", "unverified"}


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _platforms() -> dict[str, Any]:
    if not FACTS.is_file():
        pytest.skip(f"the shared platform facts are not beside this checkout ({FACTS})")
    data = yaml.safe_load(FACTS.read_text())
    return dict(data["platforms"])


def _disagreements(profile: Profile, record: dict[str, Any]) -> list[str]:
    fm = record["frontmatter"]
    verb = profile.meter_stop.verb
    out = []

    def same(what: str, ours: object, theirs: object) -> None:
        if ours != theirs:
            out.append(f"{profile.platform}: {what} is {ours!r} here, {theirs!r} in the facts")

    same("kind", profile.kind, record["kind"])
    same("meter_stop verb", verb, fm["meter_stop_verb"])
    same("meter_stop.irreversible", profile.meter_stop.irreversible, fm["meter_stop_irreversible"])
    same("meter.irreversible", profile.meter_stop.irreversible, record["meter"]["irreversible"])
    same("spot.grace_seconds", profile.spot.grace_seconds, fm["spot_grace_s"])
    same("interruption.grace_s", profile.spot.grace_seconds, record["interruption"]["grace_s"])
    same("spot.available", profile.spot.available, fm["spot_available"])
    same("china_mirror_needed", profile.china_mirror_needed, fm["china_mirror_needed"])
    same("detach", profile.detach, (fm["detach_primitive"], *fm.get("detach_fallbacks", [])))
    clocks = sorted(c.after_seconds for c in profile.danger_clocks if c.after)
    facts_clocks = record["meter"].get("danger_clocks") or []
    same(
        "danger clock durations",
        clocks,
        sorted(c["duration_s"] for c in facts_clocks if c.get("duration_s")),
    )
    tiers = [t for t in record["storage_tiers"] if t.get("available", True) is not False]
    same(
        "tier names", sorted(t.name for t in profile.tiers), sorted(_slug(t["name"]) for t in tiers)
    )
    for fact in tiers:
        tier = profile.tier(_slug(fact["name"]))
        if tier is None:
            continue
        survives = fact["survives_stop"] if verb in STOP_LIKE else fact["survives_destroy"]
        same(f"{tier.name}.survives_stop", tier.survives_stop, fact["survives_stop"])
        same(f"{tier.name}.survives_meter_stop", tier.survives_meter_stop, survives)
        same(f"{tier.name}.shared", tier.shared, fact["shared_across_instances"])
        same(f"{tier.name}.region_locked", tier.region_locked, fact["region_locked"])
        same(
            f"{tier.name}.billed_while_stopped",
            tier.billed_while_stopped,
            fact["billed_while_stopped"],
        )
        same(f"{tier.name}.inode_cap", tier.inode_cap, (fact.get("cap") or {}).get("inodes"))
        if tier.name == profile.durable_tier_name:
            same("durable tier survives the meter stop", survives, True)
    return out


def test_every_frontmatter_fact_agrees_with_the_platform_facts() -> None:
    platforms = _platforms()
    assert len(platforms) == 15
    problems = [
        p for name, record in platforms.items() for p in _disagreements(load_profile(name), record)
    ]
    assert problems == []


def test_the_cross_check_would_catch_a_wrong_fact() -> None:
    record = _platforms()["runpod"]
    profile = load_profile("runpod")
    import dataclasses

    wrong = dataclasses.replace(
        profile,
        spot=dataclasses.replace(profile.spot, grace_seconds=30),
        tiers=tuple(
            dataclasses.replace(t, survives_meter_stop=True) if t.name == "volume-disk" else t
            for t in profile.tiers
        ),
    )
    found = _disagreements(wrong, record)
    assert any("spot.grace_seconds" in p for p in found)
    assert any("volume-disk.survives_meter_stop" in p for p in found)

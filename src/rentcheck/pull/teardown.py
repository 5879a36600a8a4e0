"""The teardown gate: nothing is released until the pull was verified against the box as it is now.

It passes only when ``PULL_VERIFIED.json`` exists, names the same manifest digest as the manifest
re-read from the box now, every verified file still has its recorded size and mtime, and the
person approved the platform's meter-stop action after being told what it destroys. It reads
files and reports; it never runs a platform command and never deletes anything.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rentcheck import record
from rentcheck.errors import FormatError
from rentcheck.model import Finding, Severity
from rentcheck.pull import manifest_builder as builder
from rentcheck.pull.manifest import Manifest, load_manifest
from rentcheck.pull.marker import VerifiedMarker, load_verified_marker, marker_drift
from rentcheck.pull.teardown_rules import (
    BOX_MANIFEST_UNREADABLE,
    MANIFEST_CHANGED,
    METER_STOP_IRREVERSIBLE,
    METER_STOP_NOT_APPROVED,
    TEARDOWN_RULES_BY_CODE,
    VERIFIED_MARKER_MISSING,
)

if TYPE_CHECKING:
    from rentcheck.profiles.model import Profile

__all__ = ["MeterStopPlan", "TeardownResult", "check_teardown", "describe", "meter_stop_plan"]


@dataclass(frozen=True)
class MeterStopPlan:
    """The one action that stops the meter, in the profile's words (or the person's)."""

    platform: str | None
    action: str
    verb: str
    irreversible: bool | None  # None: unknown, treated as irreversible
    destroys: tuple[str, ...]  # "tier (paths)", tiers of unknown fate included
    keeps: tuple[str, ...]
    warning: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _tier(name: str, paths: tuple[str, ...], note: str = "") -> str:
    return f"{name} ({', '.join(paths) or 'no path'}){note}"


def meter_stop_plan(profile: Profile | None, text: str | None = None) -> MeterStopPlan:
    """From the profile; without one, from ``text`` (the action in the person's words)."""
    if profile is None:
        action = (text or "").strip() or "unknown"
        return MeterStopPlan(
            None,
            action,
            action.split()[0].lower() if action.split() else "",
            None,
            ("everything on the box (no profile says what survives)",),
            (),
            f"The action that stops the meter is: {action}. No platform profile was given, "
            "so what it destroys is unknown: treat everything on the box as deleted.",
        )
    meter = profile.meter_stop
    destroyed = [_tier(t.name, t.paths) for t in profile.destroyed_tiers]
    destroyed += [
        _tier(t.name, t.paths, " (fate unknown: treat as deleted)")
        for t in profile.tiers
        if t.survives_meter_stop is None and t.name not in meter.destroys
    ]
    kept = tuple(_tier(t.name, t.paths) for t in profile.tiers if t.name in meter.keeps)
    warning = profile.meter_stop_warning()
    if text:
        warning += f" You describe it as: {text.strip()}."
    return MeterStopPlan(
        profile.platform,
        meter.action,
        meter.verb,
        meter.irreversible,
        tuple(destroyed),
        kept,
        warning,
    )


@dataclass(frozen=True)
class TeardownResult:
    findings: tuple[Finding, ...]
    marker_path: str
    manifest_now: str
    verified_manifest_sha256: str | None
    now_manifest_sha256: str | None
    plan: MeterStopPlan
    approved: bool
    files_checked: int

    @property
    def passed(self) -> bool:
        return not any(f.severity >= Severity.ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "approved": self.approved,
            "marker": self.marker_path,
            "manifest_now": self.manifest_now,
            "manifest_sha256": {
                "verified": self.verified_manifest_sha256,
                "now": self.now_manifest_sha256,
            },
            "meter_stop": self.plan.to_dict(),
            "runs_platform_commands": False,
        }


def _finding(code: str, message: str, path: str | None, **details: Any) -> Finding:
    return TEARDOWN_RULES_BY_CODE[code].finding(message, path=path, details=details)


def _roster_change(marker: VerifiedMarker, now: Manifest) -> str:
    """How the box's roster differs from the verified one, in a few words."""
    before = {f.path: f.sha256 for f in marker.files}
    after = {e.path: e.sha256 for e in now.files}
    new = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    parts = [
        f"{len(items)} {what}, e.g. {items[0]!r}"
        for items, what in ((new, "new on the box"), (changed, "changed"), (gone, "gone"))
        if items
    ]
    if now.run_id != marker.run_id:
        parts.insert(0, f"run {now.run_id!r} instead of {marker.run_id!r}")
    return "; ".join(parts) or "same files, rebuilt manifest"


def _marker_path(verified: str) -> tuple[str, str]:
    """(marker file, pulled root) for ``--verified`` naming either the root or the marker."""
    if os.path.isdir(verified):
        return os.path.join(verified, builder.VERIFIED_NAME), verified
    return verified, os.path.dirname(verified) or "."


def check_teardown(
    verified: str | os.PathLike[str],
    manifest_now: str | os.PathLike[str],
    plan: MeterStopPlan,
    *,
    approved: bool = False,
) -> TeardownResult:
    """Judge whether the meter may be stopped; reads files only."""
    marker_path, root = _marker_path(os.fspath(verified))
    now_path = os.fspath(manifest_now)
    findings: list[Finding] = []
    marker: VerifiedMarker | None = None
    now: Manifest | None = None
    try:
        marker = load_verified_marker(marker_path)
    except FormatError as exc:
        findings.append(
            _finding(VERIFIED_MARKER_MISSING, f"no verified pull: {exc.message}", marker_path)
        )
    try:
        now = load_manifest(now_path)
    except FormatError as exc:
        findings.append(_finding(BOX_MANIFEST_UNREADABLE, exc.message, now_path))
    if marker is not None and now is not None and now.sha256 != marker.manifest_sha256:
        findings.append(
            _finding(
                MANIFEST_CHANGED,
                f"the box's manifest (sha256 {now.sha256[:12]}...) is not the one verified "
                f"(sha256 {marker.manifest_sha256[:12]}...): {_roster_change(marker, now)}",
                now_path,
                verified=marker.manifest_sha256,
                now=now.sha256,
            )
        )
    if marker is not None:
        for drift in marker_drift(root, marker):
            shown = os.path.join(root, drift.path) if drift.path else root
            findings.append(record.replace(drift, path=shown))
    if not findings and not approved:
        destroys = "; ".join(plan.destroys) or "no storage tier"
        findings.append(
            _finding(
                METER_STOP_NOT_APPROVED,
                f"the pull is verified, but stopping the meter needs --approve: "
                f"{plan.action!r} destroys {destroys}",
                None,
                destroys=list(plan.destroys),
            )
        )
    if plan.irreversible is not False and plan.verb not in ("none", "automatic"):
        undo = "cannot be undone" if plan.irreversible else "may not be reversible (unknown)"
        findings.append(_finding(METER_STOP_IRREVERSIBLE, f"{plan.action!r} {undo}", None))
    return TeardownResult(
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        marker_path=marker_path,
        manifest_now=now_path,
        verified_manifest_sha256=marker.manifest_sha256 if marker else None,
        now_manifest_sha256=now.sha256 if now else None,
        plan=plan,
        approved=approved,
        files_checked=len(marker.files) if marker else 0,
    )


def describe(result: TeardownResult, *, order_met: bool = True) -> str:
    """The meter-stop block printed above the findings (text output); ``order_met`` is
    whether the gates teardown requires (verify of this manifest) are in the ledger."""
    plan = result.plan
    where = f" on {plan.platform}" if plan.platform else ""
    undo = {True: "cannot be undone", False: "can be undone", None: "reversibility unknown"}
    lines = [
        f"meter stop{where}: {plan.action} ({undo[plan.irreversible]})",
        f"  destroys: {'; '.join(plan.destroys) or 'no storage tier'}",
    ]
    if plan.keeps:
        lines.append(f"  keeps:    {'; '.join(plan.keeps)}")
    lines.append(f"  {plan.warning}")
    if result.passed and order_met:
        lines.append("teardown gate passed: you may now stop the meter yourself.")
    lines.append("rentcheck never runs the platform's meter-stop command.")
    return "\n".join(lines) + "\n\n"

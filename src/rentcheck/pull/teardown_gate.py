"""The teardown gate as the CLI and the pytest item run it: the request, the box re-read now,
the judgement, the ledger evidence (the approval included)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rentcheck.errors import FormatError, RemoteError, UsageError

if TYPE_CHECKING:
    from rentcheck.config import Config
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.marker import VerifiedMarker
    from rentcheck.pull.teardown import BoxNow, MeterStopPlan
    from rentcheck.pull.teardown_record import BoxRecord, RecordNow

__all__ = ["TeardownRequest", "teardown_manifest", "teardown_result"]


@dataclass(frozen=True)
class TeardownRequest:
    verified: str  # the pulled root, or its PULL_VERIFIED.json
    host: str | None = None  # re-read this box now ...
    manifest_now: str | None = None  # ... or this roster rebuilt on it
    remote_root: str | None = None  # default: where the pull recorded it
    profile: str | None = None
    meter_stop: str | None = None
    approve: bool = False
    rehash: bool = False
    ssh_config: str | None = None
    connect_timeout: float | None = None
    timeout: float = 900.0


def teardown_manifest(request: TeardownRequest) -> str | None:
    """The manifest digest the marker was verified against (the ledger's evidence)."""
    from rentcheck.pull.teardown import read_marker

    marker, _ = read_marker(request.verified)
    return None if marker is None else "sha256:" + marker.manifest_sha256


def _plan(config: Config, request: TeardownRequest) -> tuple[str | None, MeterStopPlan]:
    from rentcheck.pull.settings import teardown_settings
    from rentcheck.pull.teardown import meter_stop_plan

    given = {"profile": request.profile, "meter_stop": request.meter_stop}
    settings = teardown_settings(config, given)
    if settings.profile is None and settings.meter_stop is None:
        raise UsageError(
            "teardown needs the platform: --profile NAME (see `rentcheck profiles`)",
            hint="or describe the meter-stop action with --meter-stop TEXT",
        )
    if request.host is None and request.manifest_now is None:
        raise UsageError(
            "teardown re-reads the box as it is now: --host HOST (or local)",
            hint="or --manifest-now FILE, a PULL_MANIFEST.json rebuilt on the box just now",
        )
    profile = None
    if settings.profile is not None:
        from rentcheck.profiles import load_profile

        profile = load_profile(settings.profile, config)
    return settings.profile, meter_stop_plan(profile, settings.meter_stop)


def _remote_root(request: TeardownRequest, marker: VerifiedMarker | None) -> str | None:
    if request.remote_root is not None:
        return request.remote_root
    root = None if marker is None else (marker.raw.get("source") or {}).get("remote_root")
    return str(root) if root else None


def _box_host(request: TeardownRequest, marker: VerifiedMarker | None) -> tuple[str, ...]:
    """The names the ledger may know this box by: the teardown's --host and the pull's."""
    pulled = None if marker is None else (marker.raw.get("source") or {}).get("host")
    return tuple(dict.fromkeys(str(h) for h in (request.host, pulled) if h))


def _box_now(
    request: TeardownRequest, marker: VerifiedMarker | None, record: BoxRecord
) -> tuple[BoxNow | None, RecordNow]:
    """The box as it is now, from ``manifest_now`` or re-read over SSH, and its answer about
    what the ledger records for it (None: not asked)."""
    from rentcheck.pull.teardown import (
        box_now_from_manifest,
        marker_path,
        pulled_roster,
        read_box_now,
    )
    from rentcheck.pull.teardown_record import RecordNow, ask_box

    if marker is None:  # nothing to compare with: RC801 says so
        return None, RecordNow(unreadable="no verified pull, so the box was not asked")
    if request.manifest_now is not None:
        why = "--manifest-now says nothing about processes: run teardown with --host HOST"
        pulled = pulled_roster(marker_path(request.verified)[1], marker)
        return box_now_from_manifest(request.manifest_now, pulled), RecordNow(unreadable=why)
    if request.host is None:
        return None, RecordNow(unreadable="no --host, so the box was not asked")
    root = _remote_root(request, marker)
    if not root:
        raise UsageError(
            "the marker does not say where the files are on the box (it was not written by "
            "`rentcheck pull`)",
            hint="pass --remote-root PATH",
        )
    from rentcheck.box.transport import close_all, open_box

    pulled = pulled_roster(marker_path(request.verified)[1], marker)
    try:
        box = open_box(
            request.host, ssh_config=request.ssh_config, connect_timeout=request.connect_timeout
        )
        # The jobs first, the files after: a job proved ended before the re-read cannot
        # write anything the re-read misses.
        asked = ask_box(box, record, root, timeout=request.timeout)
        now = read_box_now(
            box, root, marker, pulled, rehash=request.rehash, timeout=request.timeout
        )
        return now, asked
    finally:
        close_all()


def teardown_result(
    config: Config,
    request: TeardownRequest,
    run: GateRun,
    *,
    ask: Callable[[MeterStopPlan], bool] | None = None,
) -> GateResult:
    """Prerequisites, the box now, the judgement; ``ask`` (a terminal) may approve once
    everything else holds, by the person typing the platform's verb."""
    from rentcheck.gates.judge import GateResult
    from rentcheck.pull.teardown import check_teardown, describe, marker_path, read_marker
    from rentcheck.pull.teardown_record import RecordNow, judge_record, recorded_about

    profile, plan = _plan(config, request)
    order_met = run.precheck()
    marker, _ = read_marker(request.verified)
    hosts = _box_host(request, marker)
    record = recorded_about(run.root, hosts)
    now, unreadable = None, None
    try:
        now, asked = _box_now(request, marker, record)
    except (RemoteError, UsageError, FormatError) as exc:
        unreadable = str(exc)
        asked = RecordNow(unreadable=unreadable)
    host = hosts[0] if hosts else "the box"
    record_verdict = judge_record(record, asked, _remote_root(request, marker), host)

    def judged(approved: bool) -> Any:
        return check_teardown(
            request.verified,
            now,
            plan,
            approved=approved,
            unreadable=unreadable,
            rehash=request.rehash,
            recorded=record_verdict,
        )

    result = judged(request.approve)
    approval = "--approve" if request.approve else None
    if ask is not None and result.ready_but_unapproved and order_met and ask(plan):
        approval = f"typed {plan.verb!r}"
        result = judged(True)
    evidence: dict[str, str] = {"manifest": run.manifest} if run.manifest else {}
    approved: dict[str, str] = {}
    if approval and marker is not None:
        # Kept by the ledger only when the one verdict passes (GateResult.pass_evidence).
        approved["approval"] = approval
        from rentcheck.pull.verify_gate import sha256_of

        approved["marker"] = "sha256:" + sha256_of(marker_path(request.verified)[0])
    extras = {**result.to_dict(), "approval": approval}
    return GateResult(
        "teardown",
        list(result.findings),
        extras={"teardown": extras},
        files_checked=result.files_checked,
        host=request.host,
        profile=profile,
        evidence=evidence,
        pass_evidence=approved,
        seen={
            "box_reads": 0 if now is None else 1,
            "jobs_accounted": int(result.jobs_proved_ended >= result.jobs_recorded),
        },
        say=lambda passed: describe(result, passed=passed),
    )


def verified_dir(verified: str) -> str:
    """The pulled root named by ``verified`` (the root itself or its marker)."""
    return verified if os.path.isdir(verified) else (os.path.dirname(verified) or ".")

"""The watch judgement on probe facts: GPU, OOM baseline, Xid, disk, restarts (pure)."""

from __future__ import annotations

from typing import Any

from rentcheck.box.launch_settings import WatchSettings
from rentcheck.box.probe import EVENT_FIELDS
from rentcheck.box.watch import judge_watch

NOW = 1_800_000_000.0


def _facts(**extra: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "now": NOW,
        "status": {"pid": 10, "pgid": 10, "start_ticks": 500, "started_at": NOW - 600},
        "process": {"alive": True, "sid": 10, "group_alive": 2},
        "log": {
            "path": "/r/log",
            "size": 900,
            "mtime": NOW - 5,
            "last_step": {"step": 120, "line": "step=120 loss=0.1"},
            "tail": [],
        },
        "checkpoint": {"dir": "/r/ckpt", "newest": {"path": "/r/ckpt/a.pt", "mtime": NOW - 180}},
        "disk": {
            "log": {
                "path": "/r",
                "bytes_total": 100,
                "bytes_free": 39,
                "inodes_total": 100,
                "inodes_free": 88,
            }
        },
        "memory": {"oom_kill": 0},
        "unreadable": [],
    }
    facts.update(extra)
    return facts


def _gpu(util: str, thermal: str = "Not Active", xids: tuple[str, ...] = ()) -> dict[str, Any]:
    fields = EVENT_FIELDS.split(",")
    row = {name: "0" for name in fields}
    row.update({"index": "0", "utilization.gpu": util})
    row["clocks_event_reasons.hw_thermal_slowdown"] = thermal
    csv = ", ".join(row[name] for name in fields)
    return {"query": {"fields": fields, "csv": csv + "\n"}, "xid_lines": list(xids)}


def test_a_healthy_job_gives_the_one_line_with_step_ckpt_disk_and_gpu() -> None:
    previous = {"start_ticks": 500, "step": 100, "health": "OK"}
    out = judge_watch(_facts(gpu=_gpu("98")), previous, WatchSettings(), "box1")
    assert out.findings == [] and out.exit_code == 0
    assert out.line.endswith("box1 step 120 (+20) ckpt 3m ago disk 61% inodes 12% gpu 98% OK")


def test_new_oom_kills_and_xids_count_against_the_first_watch_only() -> None:
    settings = WatchSettings()
    first = judge_watch(_facts(memory={"oom_kill": 3}, gpu=_gpu("90", xids=("old Xid 13",))),
                        None, settings, "b")  # fmt: skip
    assert first.exit_code == 0, first.findings  # kills before the first watch are the baseline
    later = _facts(memory={"oom_kill": 4}, gpu=_gpu("90", "Active", ("old Xid 13", "Xid 79")))
    second = judge_watch(later, first.state, settings, "b")
    codes = sorted(f.code for f in second.findings)
    assert codes == ["RC357", "RC358", "RC358"] and second.exit_code == 1
    assert second.line.endswith("DEGRADED")


def test_a_relaunch_is_a_new_baseline_and_a_full_disk_degrades() -> None:
    old = {"start_ticks": 1, "oom_baseline": 0, "step": 9000}
    disk = {"d": {"path": "/d", "bytes_total": 100, "bytes_free": 2,
                  "inodes_total": 10, "inodes_free": 9}}  # fmt: skip
    out = judge_watch(_facts(memory={"oom_kill": 5}, disk=disk), old, WatchSettings(), "b")
    assert [f.code for f in out.findings] == ["RC356"]
    assert "step 120 " in out.line and "(+" not in out.line  # a new run: no delta to 9000

"""The watch judgement on probe facts: GPU, OOM baseline, Xid, disk, restarts (pure)."""

from __future__ import annotations

from typing import Any

from rentcheck.box.launch_settings import WatchSettings
from rentcheck.box.watch import judge_watch
from rentcheck.payload.probe import EVENT_FIELDS

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


def test_a_stale_checkpoint_and_a_wrapper_gone_with_its_group_running() -> None:
    import dataclasses

    settings = dataclasses.replace(WatchSettings(), checkpoint_max_age=60.0)
    old_ckpt = _facts(
        checkpoint={"dir": "/r/ckpt", "newest": {"path": "/r/ckpt/a.pt", "mtime": NOW - 600}}
    )
    stale = judge_watch(old_ckpt, None, settings, "b")
    assert [f.code for f in stale.findings] == ["RC355"]
    assert "newest checkpoint /r/ckpt/a.pt is 10m old" in stale.findings[0].message
    orphans = _facts(process={"alive": False, "sid": 10, "group_alive": 3})
    gone = judge_watch(orphans, None, WatchSettings(), "b")
    assert "RC360" in [f.code for f in gone.findings]
    assert "3 processes of its group still run" in next(
        f.message for f in gone.findings if f.code == "RC360"
    )


def test_launch_check_judges_dead_login_bound_and_missing_jobs() -> None:
    from rentcheck.box.launch_check import launch_findings

    status = {"pid": 10, "pgid": 10, "start_ticks": 500, "started_at": NOW - 5}
    log = {"path": "/r/log", "first_step": "step=1 loss=2.0", "tail": ["step=1 loss=2.0"]}
    dead = {"status": status, "process": {"alive": False, "reason": "pid 10 is gone"}, "log": log}
    assert [f.code for f in launch_findings(dead, "b", "train", 60)] == ["RC330"]
    bound = {"status": status, "process": {"alive": True, "sid": 7}, "log": log}
    [login] = launch_findings(bound, "b", "train", 60)
    assert login.code == "RC331" and "runs in session 7 (not its own)" in login.message
    missing = {"status": None, "job_dir": "~/.rentcheck/jobs/train", "unreadable": []}
    assert [f.code for f in launch_findings(missing, "b", "train", 60)] == ["RC335"]
    healthy = {"status": status, "process": {"alive": True, "sid": 10}, "log": log}
    assert launch_findings(healthy, "b", "train", 60) == []

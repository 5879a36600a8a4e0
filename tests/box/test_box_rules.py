"""The RC3xx rules as pure functions of recorded facts, settings and a profile."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from rentcheck.box.audit import evaluate
from rentcheck.box.durable import profile_view
from rentcheck.box.rules import BOX_RULES
from rentcheck.box.settings import GIB, AuditSettings, Budget
from rentcheck.model import Severity

ROOT = {"mount_id": 20, "mount_point": "/", "fstype": "overlay", "source": "overlay"}
DATA = {"mount_id": 31, "mount_point": "/root/autodl-tmp", "fstype": "ext4", "source": "/dev/vdb"}
FS = {"mount_id": 32, "mount_point": "/root/autodl-fs", "fstype": "fuse.juicefs", "source": "jfs"}


def _place(path: str, mount: dict[str, Any], total: int, free: int, **more: Any) -> dict[str, Any]:
    space = {"bytes_total": total, "bytes_free": free, "inodes_total": 1_000_000,
             "inodes_free": 900_000}  # fmt: skip
    space.update(more.pop("space", {}))
    return {"path": path, "realpath": path, "exists": True, "is_symlink": False,
            "measured_at": path, "space": space, "mount": mount, **more}  # fmt: skip


BOX: dict[str, Any] = {
    "schema": "rentcheck/box-facts/v1",
    "host": {"home": "/root"},
    "root": _place("/", ROOT, 30 * GIB, 10 * GIB),
    "paths": {
        "data": _place("/root/autodl-tmp", DATA, 200 * GIB, 150 * GIB),
        "durable": _place("/root/autodl-fs", FS, 1000 * GIB, 800 * GIB),
    },
    "caches": [],
    "memory": {
        "cgroup_version": 2,
        "limit_bytes": 16 * GIB,
        "mem_total_bytes": 256 * GIB,
        "usage_bytes": GIB,
        "oom_kill": 0,
    },
    "cpu": {"nproc": 64, "quota_cores": 8.0},
    "shm": {"bytes_total": 64 * 1024 * 1024},
    "tools": {
        "tmux": "/usr/bin/tmux",
        "screen": None,
        "setsid": "/usr/bin/setsid",
        "nohup": "/usr/bin/nohup",
    },
    "live_scripts": [],
    "unreadable": [],
}
CPU_BOX = AuditSettings(expect_gpu=False)


def facts(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BOX)
    out.update(changes)
    return out


def codes(box: dict[str, Any], settings: AuditSettings = CPU_BOX, **kw: Any) -> list[str]:
    return [f.code for f in evaluate(box, settings, "gpu-box", **kw)]


def test_a_healthy_box_has_no_findings() -> None:
    assert codes(facts()) == []


def test_budget_per_path() -> None:
    budget = Budget(checkpoint_bytes=60 * GIB, keep=3, scratch_bytes=20 * GIB)  # 200 GiB
    found = evaluate(facts(), AuditSettings(expect_gpu=False, budget=budget), "h")
    assert [(f.code, f.details["role"]) for f in found] == [("RC301", "data")]
    assert "3 x 60.0 GiB + 20.0 GiB = 200.0 GiB" in found[0].message
    only_durable = Budget(total_override=900 * GIB, roles=("durable",))
    assert codes(facts(), AuditSettings(expect_gpu=False, budget=only_durable)) == ["RC301"]


def test_inodes_by_fraction_and_by_minimum() -> None:
    box = facts()
    box["paths"]["durable"]["space"].update(inodes_total=200_000, inodes_free=9_000)
    found = evaluate(box, CPU_BOX, "h")
    assert [f.code for f in found] == ["RC302"] and "191,000 of 200,000" in found[0].message
    assert codes(facts(), AuditSettings(expect_gpu=False, min_free_inodes=950_000)) == [
        "RC302",
        "RC302",
    ]
    box["paths"]["durable"]["space"].update(inodes_total=0, inodes_free=0)  # btrfs: no count
    assert codes(box) == []


def test_cache_on_the_small_root_disk_or_a_full_mount() -> None:
    hf = _place("/root/.cache/huggingface", ROOT, 30 * GIB, 10 * GIB, is_symlink=False)
    hf.update(name="huggingface", source="default", size_bytes=12 * GIB)
    found = evaluate(facts(caches=[hf]), CPU_BOX, "h")
    assert [f.code for f in found] == ["RC303"] and "small root disk" in found[0].message
    moved = _place("/root/.cache/huggingface", DATA, 200 * GIB, 150 * GIB, is_symlink=True)
    moved.update(name="huggingface", source="default", realpath="/root/autodl-tmp/hf")
    assert codes(facts(caches=[moved])) == []
    moved["space"]["bytes_free"] = 5 * GIB  # 97.5% used
    found = evaluate(facts(caches=[moved]), CPU_BOX, "h")
    assert "nearly full" in found[0].message and "-> /root/autodl-tmp/hf" in found[0].message


def test_durable_path_on_the_root_mount_with_configured_durable_mounts() -> None:
    settings = AuditSettings(expect_gpu=False, durable_mounts=("/root/autodl-fs",))
    assert codes(facts(), settings) == []
    missing_mount = facts()
    missing_mount["paths"]["durable"]["mount"] = ROOT  # the network FS is not mounted
    found = evaluate(missing_mount, settings, "h")
    assert [f.code for f in found] == ["RC304"] and "root filesystem" in found[0].message
    elsewhere = facts()
    elsewhere["paths"]["checkpoint"] = _place("/root/autodl-tmp/ckpt", DATA, 1, 1)
    elsewhere["paths"]["checkpoint"]["space"].update(bytes_total=200 * GIB, bytes_free=GIB)
    found = evaluate(elsewhere, settings, "h")
    assert [f.code for f in found] == ["RC304"] and "not on a durable mount" in found[0].message


def test_durable_path_without_config_is_a_warning_only_on_root() -> None:
    box = facts()
    assert codes(box) == []
    box["paths"]["durable"]["mount"] = ROOT
    found = evaluate(box, CPU_BOX, "h")
    assert [(f.code, f.severity) for f in found] == [("RC304", Severity.WARNING)]


PROFILE = {
    "platform": "rentbox",
    "meter_stop": {"action": "terminate", "destroys": ["container"]},
    "tiers": [
        {"name": "container", "paths": ["/"], "survives_meter_stop": False},
        {"name": "volume", "paths": ["~/autodl-fs"], "survives_meter_stop": True},
        {"name": "scratch", "paths": ["/root/autodl-tmp"], "survives_meter_stop": False},
    ],
}


def test_profile_tiers_decide() -> None:
    view = profile_view(PROFILE, "rentbox")
    assert codes(facts(), profile=view) == []  # ~ is the box's home: /root/autodl-fs
    box = facts()
    box["paths"]["checkpoint"] = _place("/root/autodl-tmp/ckpt", DATA, 200 * GIB, 150 * GIB)
    found = evaluate(box, CPU_BOX, "h", profile=view)
    assert [f.code for f in found] == ["RC304"]
    assert "'scratch', which `terminate` destroys on rentbox" in found[0].message
    unmounted = facts()
    unmounted["paths"]["durable"]["mount"] = ROOT
    found = evaluate(unmounted, CPU_BOX, "h", profile=view)
    assert "same mount as /" in found[0].message and "is the mount missing" in found[0].message


def test_a_danger_clock_counts_as_destroying_what_it_deletes() -> None:
    """autodl's shutdown keeps the data disk, but an instance left shut down is released after
    15 days and the data disk with it: a checkpoint there is not durable (the shipped profile)."""
    from rentcheck.box.runner import load_profile
    from rentcheck.config import Config

    view = load_profile("autodl", Config(root="."))
    box = facts()
    box["paths"]["checkpoint"] = _place("/root/autodl-tmp/ckpt", DATA, 200 * GIB, 150 * GIB)
    found = evaluate(box, CPU_BOX, "h", profile=view)
    assert [(f.code, f.severity) for f in found] == [("RC304", Severity.ERROR)]
    assert "which `shutdown (关机)` keeps, but the danger clock" in found[0].message
    assert 'are deleted (after 15d)" deletes it on autodl' in found[0].message
    # The shared file system outlives the clock: a checkpoint there passes.
    box["paths"]["checkpoint"] = _place("/root/autodl-fs/ckpt", FS, 1000 * GIB, 800 * GIB)
    assert codes(box, profile=view) == []
    # Without the clock's `deletes`, the same profile would have passed the data disk.
    blind = dataclasses.replace(view, clocks=())
    box["paths"]["checkpoint"] = _place("/root/autodl-tmp/ckpt", DATA, 200 * GIB, 150 * GIB)
    assert codes(box, profile=blind) == []


def test_memory_cpu_and_shm_against_the_workload() -> None:
    settings = AuditSettings(
        expect_gpu=False,
        dataloader_workers=8,
        worker_memory_bytes=2 * GIB,
        main_memory_bytes=4 * GIB,
        threads=16,
    )
    found = {f.code: f for f in evaluate(facts(), settings, "h")}
    assert set(found) == {"RC305", "RC307", "RC308"}
    assert "8 workers x 2.0 GiB + 4.0 GiB main = 20.0 GiB" in found["RC305"].message
    assert "CPU quota 8 cores" in found["RC307"].message
    roomy = facts(shm={"bytes_total": 8 * GIB}, cpu={"nproc": 64, "quota_cores": None})
    roomy["memory"]["limit_bytes"] = 512 * GIB  # above MemTotal: the host's RAM is the limit
    assert codes(roomy, settings) == []


def test_oom_baseline_detach_tools_missing_paths_and_unknowns() -> None:
    box = facts()
    box["memory"]["oom_kill"] = 3
    box["tools"] = {"tmux": None, "screen": None, "setsid": None, "nohup": "/usr/bin/nohup"}
    box["paths"]["data"]["exists"] = False
    box["unreadable"] = [{"fact": "dmesg", "why": "Operation not permitted"},
                         {"fact": "memory", "why": "no cgroup mount"}]  # fmt: skip
    found = {f.code: f for f in evaluate(box, CPU_BOX, "h")}
    assert set(found) == {"RC306", "RC314", "RC315", "RC316"}
    assert "only nohup" in found["RC314"].message
    assert "memory" in found["RC316"].message  # dmesg is irrelevant without a GPU
    gpu = {f.details["fact"] for f in evaluate(box, AuditSettings(expect_gpu=True), "h")
           if f.code == "RC316"}  # fmt: skip
    assert gpu == {"dmesg", "memory"}


def test_sh_probe_facts_are_judged_without_errors() -> None:
    # What the POSIX fallback returns: no cgroup, caches, live scripts or GPU sections.
    partial = {key: BOX[key] for key in ("schema", "root", "paths", "tools", "cpu", "shm")}
    partial["unreadable"] = [{"fact": "python3", "why": "no python3 on the box"}]
    assert codes(partial) == ["RC316"]


def test_every_rule_code_is_in_the_families() -> None:
    assert {r.code[:3] for r in BOX_RULES} == {"RC3", "RC4"}
    assert len({r.code for r in BOX_RULES}) == len(BOX_RULES)


@pytest.mark.parametrize("host", ["local", "gpu-box"])
def test_expect_gpu_defaults_to_ssh_hosts_only(host: str) -> None:
    assert AuditSettings().gpu_expected(host) is (host != "local")

"""The probe program itself: old-Python syntax, the sh fallback, partial failures, cache walks."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from rentcheck.box.facts import probe_script, probe_stream
from rentcheck.box.transport import LocalBox
from rentcheck.payload import probe


def test_the_probe_parses_as_python_3_6() -> None:
    source = Path(probe.__file__).read_text()
    ast.parse(source, feature_version=(3, 6))  # boxes run old interpreters
    assert "from __future__" not in source  # the polyglot header must stay the docstring
    stream = probe_stream().decode()
    assert stream.startswith("''':'\n") and stream.count("'''") == 2 + source.count("'''")


def test_sh_fallback_and_python_agree_on_disks(tmp_path: Path) -> None:
    request = {"paths": {"data": str(tmp_path), "gone": str(tmp_path / "x y" / "z")}}
    box = LocalBox()
    sh = box.run(probe_script(request, python="python3-absent"), stdin=probe_stream())
    py = box.run(probe_script(request), stdin=probe_stream())
    assert sh.ok and py.ok, sh.stderr + py.stderr
    by_sh, by_py = json.loads(sh.stdout), json.loads(py.stdout)
    assert (by_sh["probe"]["kind"], by_py["probe"]["kind"]) == ("sh", "python")
    for role in ("data", "gone"):
        a, b = by_sh["paths"][role], by_py["paths"][role]
        assert (a["exists"], a["measured_at"]) == (b["exists"], b["measured_at"])
        assert a["mount"]["mount_point"] == b["mount"]["mount_point"]
        assert a["space"]["bytes_total"] == b["space"]["bytes_total"]
    assert by_sh["paths"]["gone"]["exists"] is False
    assert by_sh["tools"] == by_py["tools"]
    assert by_sh["unreadable"][0]["fact"] == "python3"


def test_one_bad_fact_does_not_lose_the_others(tmp_path: Path) -> None:
    facts = probe.Probe({"paths": {"bad": "a\0b", "ok": str(tmp_path)}}).gather()
    assert facts["paths"]["bad"] is None and facts["paths"]["ok"]["exists"]
    assert [u["fact"] for u in facts["unreadable"]] == ["paths.bad"]
    assert "ValueError" in facts["unreadable"][0]["why"]
    assert facts["memory"] is not None and facts["cpu"]["nproc"] >= 1


def test_cache_walk_follows_only_the_top_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "disk" / "hf"
    (real / "blobs").mkdir(parents=True)
    (real / "blobs" / "a").write_bytes(b"x" * 100_000)
    os.link(real / "blobs" / "a", real / "blobs" / "a-again")  # counted once
    (real / "snapshots").mkdir()
    (real / "snapshots" / "w").symlink_to(real / "blobs" / "a")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"y" * 500_000)
    (real / "elsewhere").symlink_to(outside)  # not followed below the top
    link = tmp_path / "home-cache"
    link.symlink_to(real)
    monkeypatch.setenv("HF_HOME", str(link))
    facts = probe.Probe({"sections": ["caches"], "walk_seconds": 30}).gather()
    hf = next(c for c in facts["caches"] if c["source"] == "HF_HOME")
    assert hf["is_symlink"] and hf["realpath"] == str(real) and hf["complete"]
    assert 100_000 <= hf["size_bytes"] < 200_000
    assert hf["files"] == 3  # a, w (the link itself), elsewhere (the link itself)


def test_cache_walk_stops_at_its_time_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hf" / "d").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    facts = probe.Probe({"sections": ["caches"], "walk_seconds": -1}).gather()
    hf = next(c for c in facts["caches"] if c["source"] == "HF_HUB_CACHE")
    assert hf["complete"] is False


def test_mounts_and_cgroup_facts_of_this_machine() -> None:
    mounts = probe.read_mounts()
    shm = probe.place("/dev/shm/some/file", mounts)
    assert shm["mount"]["fstype"] == "tmpfs" and shm["measured_at"] == "/dev/shm"
    memory = probe.memory(mounts)
    assert memory["cgroup_version"] in (1, 2) and memory["mem_total_bytes"] > 0


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["bash", "run.sh", "arg"], "run.sh"),
        (["/bin/bash", "-e", "-o", "pipefail", "/w/run.sh"], "/w/run.sh"),
        (["bash", "-c", "echo hi"], ""),
        (["bash", "-lc", "echo hi"], ""),
        (["bash", "-s"], ""),
        (["sh", "--", "x.sh"], "x.sh"),
        (["-bash"], ""),
    ],
)
def test_shell_script_argument(argv: list[str], script: str) -> None:
    assert probe._script_arg(argv, probe.SHELL_OPTS_WITH_VALUE, "cs") == script


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["python3", "-u", "train.py", "--lr", "1"], "train.py"),
        (["python", "-W", "ignore", "-X", "dev", "t.py"], "t.py"),
        (["python", "-Werror::DeprecationWarning", "t.py"], "t.py"),
        (["python3", "-m", "torch.distributed.run", "t.py"], ""),
        (["python3", "-c", "print(1)"], ""),
        (["python3", "-"], ""),
    ],
)
def test_python_script_argument(argv: list[str], script: str) -> None:
    assert probe._script_arg(argv, probe.PYTHON_OPTS_WITH_VALUE, "cm") == script


def test_cgroup_v2_limits_are_the_tightest_on_the_way_up(tmp_path: Path) -> None:
    # A recorded cgroup2 tree (this machine is v1): the parent's limits are tighter.
    top = tmp_path / "cgroup"
    job = top / "user.slice" / "job"
    job.mkdir(parents=True)
    (top / "user.slice" / "memory.max").write_text(f"{8 << 30}\n")
    (top / "user.slice" / "cpu.max").write_text("200000 100000\n")
    (job / "memory.max").write_text("max\n")
    (job / "cpu.max").write_text("max 100000\n")
    (job / "memory.current").write_text(f"{1 << 30}\n")
    (job / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\n")
    mounts = [{"fstype": "cgroup2", "mount_point": str(top), "root": "/", "super_options": "rw"}]
    paths = {"": "/user.slice/job"}
    memory = probe.memory(mounts, paths)
    assert (memory["cgroup_version"], memory["limit_bytes"]) == (2, 8 << 30)
    assert (memory["usage_bytes"], memory["oom_kill"]) == (1 << 30, 1)
    assert probe.cpu(mounts, paths)["quota_cores"] == 2.0
    (top / "user.slice" / "cpu.max").write_text("max 100000\n")
    assert probe.cpu(mounts, paths)["quota_cores"] is None


def _hung_tool(path: Path) -> str:
    path.write_text("#!/bin/sh\nsleep 300\n")
    path.chmod(0o755)
    return str(path)


def test_a_hung_nvidia_smi_and_torch_cost_only_their_own_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rentcheck.box.facts import gather_facts

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _hung_tool(bin_dir / "nvidia-smi")
    python = _hung_tool(bin_dir / "python-with-torch")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    request = {
        "paths": {"data": str(tmp_path)},
        "gpu": True,
        "torch_python": python,
        "torch_timeout": 4.0,
        "budget_s": 4.0,
    }
    # The server-side limit is 6 s: without per-fact budgets the 20 s nvidia-smi waits and
    # the torch wait outlast it and the whole answer is lost.
    facts = gather_facts(LocalBox(), request, timeout=6)
    assert facts["paths"]["data"]["exists"] is True and facts["memory"] is not None
    assert facts["probe"]["seconds"] < 6
    assert "timed out" in facts["torch"]["error"]
    notes = {u["fact"]: u["why"] for u in facts["unreadable"]}
    assert "timed out" in notes["nvidia-smi"]


class _TickingClock:
    """time.time() that moves one second per call: "slow" entries without a slow disk."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        self.now += 1
        return self.now


def test_the_cache_walk_checks_its_budget_inside_one_flat_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3000):
        (flat / str(i)).touch()
    clock = _TickingClock()
    monkeypatch.setattr(probe, "time", clock)
    _, files, complete = probe.disk_usage(str(flat), deadline=clock.now + 10.5, seen=set())
    assert complete is False and files < 20  # stopped inside the directory, not after 3000
    _, files, complete = probe.disk_usage(str(flat), deadline=float("inf"), seen=set())
    assert (files, complete) == (3000, True)


def test_the_sh_fallback_answers_valid_json_for_a_path_with_control_characters(
    tmp_path: Path,
) -> None:
    odd = tmp_path / "a\x1b[2Jb\x01c"
    odd.mkdir()
    request = {"paths": {"data": str(odd)}}
    result = LocalBox().run(probe_script(request, python="python3-absent"), stdin=probe_stream())
    facts = json.loads(result.stdout)  # raw control characters would make this invalid JSON
    assert facts["paths"]["data"]["exists"] is True

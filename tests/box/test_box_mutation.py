"""RC4xx on live processes: a script edited in place under a running shell is named; a rename is
not. Real bash and python processes, audited locally and over SSH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sshdkit import SshLab, wait_until

from rentcheck.box.mutation import TOLERANCE_S, mutation_findings

SCRIPT_V1 = '#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.05; done\necho "v1 finished"\n'


def _live(cli, host: str, root: Path, lab: SshLab) -> dict[str, Any]:
    result = cli(
        "audit", "--host", host, "--ssh-config", str(lab.ssh_config), "--no-expect-gpu",
        "--select", "RC4", "--output-format", "json", cwd=root,
    )  # fmt: skip
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


@pytest.fixture
def scoped(tmp_path: Path) -> Path:
    """Limit the audit's live-script scan to this test's directory (xdist neighbours run too)."""
    (tmp_path / "rentcheck.yaml").write_text(f"audit:\n  script_roots: [{tmp_path}]\n")
    return tmp_path


@pytest.mark.parametrize("host", ["box", "local"])
def test_script_edited_in_place_while_running_is_named(
    cli, lab: SshLab, scoped: Path, running_script, host: str
) -> None:
    script = scoped / "run.sh"
    script.write_text(SCRIPT_V1)
    proc = running_script(script)
    with open(script, "a") as handle:  # what scp, rsync --inplace and `cat >>` do
        handle.write('echo "appended later"\n')
    doc = _live(cli, host, scoped, lab)
    hits = [r for r in doc["results"] if r["code"] == "RC401"]
    assert len(hits) == 1
    assert hits[0]["details"] == {"pid": proc.pid, "command": f"bash {script}", "file": str(script)}
    assert f"pid {proc.pid}" in hits[0]["message"] and str(script) in hits[0]["message"]
    assert doc["exit_code"] == 1


@pytest.mark.parametrize("host", ["box", "local"])
def test_script_replaced_by_rename_is_not_flagged(
    cli, lab: SshLab, scoped: Path, running_script, host: str
) -> None:
    script = scoped / "run.sh"
    script.write_text(SCRIPT_V1)
    proc = running_script(script)
    fresh = scoped / ".run.sh.new"
    fresh.write_text(SCRIPT_V1.replace("v1", "v2"))
    os.replace(fresh, script)
    doc = _live(cli, host, scoped, lab)
    assert [r for r in doc["results"] if r["code"].startswith("RC4")] == []
    seen = [s for s in doc["facts"]["live_scripts"] if s["pid"] == proc.pid]
    assert seen and seen[0]["open"]["deleted"]  # the process was seen, on its old inode


def test_python_script_changed_after_start_is_rc402(cli, lab: SshLab, scoped: Path) -> None:
    script = scoped / "train.py"
    script.write_text("import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=scoped)
    try:
        wait_until(lambda: _cmdline(proc.pid).endswith("train.py"), "python never started")
        _step_past_start()
        script.write_text(script.read_text() + "print('new')\n")
        doc = _live(cli, "local", scoped, lab)
    finally:
        proc.kill()
        proc.wait()
    hits = [r for r in doc["results"] if r["code"] == "RC402"]
    assert [h["details"]["pid"] for h in hits] == [proc.pid]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _step_past_start() -> None:
    import time

    time.sleep(0.2)  # start times are known to 10 ms; edit clearly after it


def _script_fact(**changes: Any) -> dict[str, Any]:
    held = {"dev": 1, "ino": 10, "size": 100, "mtime": 1000.0}
    fact: dict[str, Any] = {
        "pid": 42,
        "kind": "shell",
        "command": "bash /w/run.sh",
        "script": "/w/run.sh",
        "started_at": 999.0,
        "open": {"fd": 255, "path": "/w/run.sh", "deleted": False, "stat": held, "pos": 50},
        "file": dict(held),
    }
    fact.update(changes)
    return fact


def test_recorded_facts_in_place_rename_and_truncation() -> None:
    def codes(fact: dict[str, Any]) -> list[str]:
        return [f.code for f in mutation_findings({"live_scripts": [fact]}, "h")]

    assert codes(_script_fact()) == ["RC401"]  # mtime 1 s after the start, same inode
    same_time = _script_fact(started_at=1000.0 - TOLERANCE_S / 2)
    assert codes(same_time) == []  # written just before the launch
    renamed = _script_fact(file={"dev": 1, "ino": 11, "size": 90, "mtime": 1001.0})
    assert codes(renamed) == []
    deleted = _script_fact()
    deleted["open"]["deleted"] = True
    assert codes(deleted) == []
    truncated = _script_fact(started_at=2000.0)
    truncated["open"]["pos"] = 500
    found = mutation_findings({"live_scripts": [truncated]}, "h")
    assert [f.code for f in found] == ["RC401"] and "shorter than the 500" in found[0].message
    assert codes(_script_fact(open=None)) == []  # no handle seen: nothing can be claimed


def test_a_script_started_through_a_symlink_is_followed(
    cli, lab: SshLab, scoped: Path, running_script
) -> None:
    real = scoped / "real-run.sh"
    real.write_text(SCRIPT_V1)
    link = scoped / "run.sh"
    link.symlink_to(real)
    proc = running_script(link)
    with open(real, "a") as handle:
        handle.write("echo later\n")
    hits = [r for r in _live(cli, "local", scoped, lab)["results"] if r["code"] == "RC401"]
    assert [(h["details"]["pid"], h["details"]["file"]) for h in hits] == [(proc.pid, str(real))]

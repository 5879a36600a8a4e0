"""``rentcheck watch --hosts TAG|all``: the inventory's hosts watched at once against a real
sshd, one merged table (host x check) with each host's status line; an unreachable host is a
row with its reason, the others complete; a dead job is its host's row, exit 3."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import yaml
from sshdkit import SshLab, wait_until

JOB = """
import sys, time
for i in range(1, 100000):
    print("step=%d loss=%.4f" % (i, 1.0 / i), flush=True)
    time.sleep(0.05)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _rows(out: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines[0].split()[0] == "host" and lines[0].split()[-1] == "result", out
    rows = {}
    for line in lines[1:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line
    return rows


def test_watch_hosts_merges_one_table(cli, lab: SshLab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.transport import close_all, open_box
    from rentcheck.ledger import LEDGER_SCHEMA, append_entry

    session = "t" + uuid.uuid4().hex[:10]
    project = tmp_path / "project"
    project.mkdir()
    inventory = {
        "watch": {"session": session},
        "hosts": {
            "good": {"alias": "box", "tags": ["gpu"]},
            "down": {"alias": "box-closed"},
            # its own ssh_config in the inventory: no --ssh-config needed to reach it
            "own": {"alias": "box", "tags": ["own"], "ssh_config": "SSH_CONFIG"},
        },
    }
    inventory["hosts"]["own"]["ssh_config"] = str(lab.ssh_config)
    (project / "rentcheck.yaml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    for name in ("good", "own"):
        launch = {"schema": LEDGER_SCHEMA, "gate": "launch", "verdict": "pass", "host": name}
        append_entry(str(project), {**launch, "unix_time": time.time()})
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "job.py").write_text(JOB)
    plan = LaunchPlan(session=session, argv=(sys.executable, "job.py"), cwd=str(rundir),
                      ckpt_dir="ckpt")  # fmt: skip
    launched = start_job(open_box("box", ssh_config=str(lab.ssh_config)), plan, {})
    close_all()
    ssh = ("--ssh-config", str(lab.ssh_config))
    try:
        wait_until(lambda: "step=2" in Path(launched.log).read_text(), "no first steps")
        logins = lab.box.log_text().count("Accepted publickey")
        result = cli("watch", "--hosts", "gpu", "--hosts", "down", *ssh, cwd=project)
        assert result.code == 2, result.out + result.err  # one host could not be checked
        rows = _rows(result.out)
        assert set(rows) == {"good", "down", "total"}
        assert rows["good"].endswith("passed")
        assert "error: cannot reach box-closed" in rows["down"]
        assert rows["total"].endswith("2 hosts: 1 passed, 1 error")
        status = [line for line in result.out.splitlines() if line.startswith("good: ")]
        assert len(status) == 1 and " good step " in status[0] and status[0].endswith("OK")
        assert lab.box.log_text().count("Accepted publickey") == logins + 1  # one connection

        tagged = cli("watch", "--hosts", "gpu", *ssh, "--output-format", "json", cwd=project)
        assert tagged.code == 0, tagged.out + tagged.err
        doc = json.loads(tagged.out)
        (host,) = doc["hosts"]
        assert host["host"] == "good" and host["exit_code"] == 0
        assert host["watch"]["host"] == "good" and host["watch"]["health"] == "OK"

        own = cli("watch", "--hosts", "own", cwd=project)  # the host's ssh_config, no flag
        assert own.code == 0, own.out + own.err
        assert _rows(own.out)["own"].endswith("passed")

        os.killpg(launched.pgid, signal.SIGKILL)
        wait_until(lambda: not _alive(launched.pid), "the job did not die")
        dead = cli("watch", "--hosts", "gpu", "--hosts", "down", *ssh, cwd=project)
        assert dead.code == 3, dead.out  # the dead job outranks the unreachable host
        rows = _rows(dead.out)
        assert "RC350" in dead.out.splitlines()[0] and rows["good"].endswith("dead")
        assert rows["total"].endswith("2 hosts: 1 dead, 1 error")
    finally:
        with contextlib.suppress(OSError):
            os.killpg(launched.pgid, signal.SIGKILL)
    ledger = (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    watched = [json.loads(line) for line in ledger if '"watch"' in line]
    assert [(e["host"], e["verdict"]) for e in watched] == [
        ("good", "pass"), ("good", "pass"), ("own", "pass"), ("good", "fail"),
    ]  # fmt: skip
    states = sorted(p.name for p in (project / ".rentcheck" / "watch").iterdir())
    assert states == [f"good-{session}.json", f"own-{session}.json"]  # names, not aliases


def test_watch_needs_one_of_host_and_hosts(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "rentcheck.yaml").write_text("hosts:\n  a: {alias: local}\n")
    neither = cli("watch", cwd=tmp_path)
    assert neither.code == 2 and "watch needs --host HOST or --hosts TAG|all" in neither.err
    both = cli("watch", "--host", "local", "--hosts", "all", cwd=tmp_path)
    assert both.code == 2 and "one of them" in both.err
    unknown = cli("watch", "--hosts", "tpu", cwd=tmp_path)
    assert unknown.code == 2 and "--hosts tpu: no host has that name or tag" in unknown.err

"""Teardown knows what rentcheck recorded about the box: on a real sshd on loopback, jobs
started with ``rentcheck launch`` must be proved ended by the box now, and a launch's
``--ckpt-dir`` must lie inside the verified pull, or teardown refuses naming them.

The job below is driven by files, never by the clock: it saves ``step_1.txt``, prints a step
line, then waits (alive, idle) until ``stop`` appears next to it in its control directory;
then it saves ``step_2.txt`` and ends. So "a live job whose files all match the pull" is a
state the test holds for as long as it likes.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import pwd
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rentcheck.ledger import LEDGER_SCHEMA, append_entry
from tests.box.sshdkit import SshLab, wait_until

JOB = r"""
import os, sys, time
ckpt, control = sys.argv[1], sys.argv[2]
os.makedirs(ckpt, exist_ok=True)
def save(n):
    with open(os.path.join(ckpt, "step_%d.txt" % n), "w") as f:
        f.write("weights of step %d\n" % n)
save(1)
print("step=1 loss=1.0", flush=True)
while not os.path.exists(os.path.join(control, "stop")):
    time.sleep(0.02)
save(2)
print("step=2 loss=0.5", flush=True)
"""

LINGER = "sleep 600 & exit 0"  # the command ends at once; its child stays in the group


def _status(session: str) -> dict[str, str]:
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    text = (home / ".rentcheck" / "jobs" / session / "status").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class Box:
    """A scratch project here and a run directory on the loopback box (the same disk)."""

    def __init__(self, cli: Any, lab: SshLab, tmp: Path) -> None:
        self.cli, self.lab = cli, lab
        self.project = tmp / "project"
        self.run = tmp / "box" / "run"
        self.control = tmp / "control"
        for d in (self.project, self.run, self.control):
            d.mkdir(parents=True)
        (self.run / "job.py").write_text(JOB)
        self.sessions: list[str] = []

    @property
    def ssh(self) -> list[str]:
        return ["--ssh-config", str(self.lab.ssh_config)]

    def launch(self, *argv: str, ckpt: str = "ckpt") -> str:
        session = "t" + uuid.uuid4().hex[:10]
        self.sessions.append(session)
        res = self.cli(
            "launch", "--host", "box", *self.ssh, "--session", session, "--cwd", str(self.run),
            "--ckpt-dir", ckpt, "--first-step-timeout", "20", "--force", "--reason", "test",
            "--", *argv, cwd=self.project,
        )  # fmt: skip
        assert res.code in (0, 1), res.out + res.err
        assert "pid" in _status(session)
        return session

    def job(self, ckpt: str = "ckpt") -> str:
        session = self.launch(
            sys.executable, str(self.run / "job.py"), ckpt, str(self.control), ckpt=ckpt
        )
        wait_until(lambda: "step=1" in self.log(session), "the job never saved step 1")
        return session

    def log(self, session: str) -> str:
        path = Path(_status(session)["log"])
        return path.read_text() if path.exists() else ""

    def finish(self, session: str) -> None:
        (self.control / "stop").write_text("")
        wait_until(lambda: "exit_status" in _status(session), "the job did not end", 60)

    def pull(self, remote: Path, local: str, project: Path | None = None) -> None:
        res = self.cli("pull", f"box:{remote}", local, *self.ssh, cwd=project or self.project)
        assert res.code == 0, res.out + res.err

    def teardown(
        self, local: str, *extra: str, project: Path | None = None
    ) -> tuple[int, dict[str, Any]]:
        res = self.cli(
            "teardown", "--verified", local, "--profile", "runpod", "--approve",
            "--output-format", "json", *extra, cwd=project or self.project,
        )  # fmt: skip
        assert res.code in (0, 1), res.out + res.err
        return res.code, json.loads(res.out)

    def stop_all(self) -> None:
        for session in self.sessions:
            with contextlib.suppress(OSError, KeyError, ValueError):
                os.killpg(int(_status(session)["pgid"]), signal.SIGKILL)


@pytest.fixture
def box(cli: Any, lab: SshLab, tmp_path: Path) -> Iterator[Box]:
    made = Box(cli, lab, tmp_path)
    yield made
    made.stop_all()


def errors(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        if r["severity"] == "error":
            found.setdefault(r["code"], []).append(r)
    return found


def test_a_live_launched_job_refuses_teardown_until_it_ends_and_is_pulled_again(
    box: Box,
) -> None:
    session = box.job()
    pid = _status(session)["pid"]
    box.pull(box.run, "results")
    # Everything on the box matches the pull: only the live job says the copy is not final.
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 1
    [running] = errors(doc)["RC806"]
    assert set(errors(doc)) == {"RC806"}
    assert f"job {session} (pid {pid})" in running["message"]
    assert f"rentcheck watch --host box --session {session}" in running["message"]
    assert f"kill -TERM -- -{_status(session)['pgid']}" in running["message"]
    td = doc["teardown"]
    assert (td["jobs_recorded"], td["jobs_proved_ended"], td["box_reread"]) == (1, 0, True)

    box.finish(session)  # it saves step_2.txt on its way out
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 1 and set(errors(doc)) == {"RC802"}  # ended, but its last save is not here
    assert [r["path"] for r in errors(doc)["RC802"]] == ["ckpt/step_2.txt"]
    assert doc["teardown"]["jobs_proved_ended"] == 1

    box.pull(box.run, "results")
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 0, doc["results"]
    td = doc["teardown"]
    assert (td["jobs_recorded"], td["jobs_proved_ended"]) == (1, 1)
    assert (td["paths_recorded"], td["paths_covered"]) == (1, 1)


def test_a_ckpt_dir_outside_the_pulled_root_refuses_naming_it_and_the_pull_that_covers_it(
    box: Box,
) -> None:
    outside = box.run.parent / "ckpt-elsewhere"
    session = box.job(ckpt=str(outside))
    box.finish(session)
    box.pull(box.run, "results")
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 1 and set(errors(doc)) == {"RC807"}
    [named] = errors(doc)["RC807"]
    assert named["path"] == str(outside)
    assert f"rentcheck pull box:{box.run.parent} LOCAL_ROOT" in named["message"]
    assert doc["teardown"]["jobs_proved_ended"] == 1

    box.pull(box.run.parent, "everything")  # the fix the message names
    code, doc = box.teardown("everything", "--host", "box", *box.ssh)
    assert code == 0, doc["results"]
    assert doc["teardown"]["paths_covered"] == 1


def test_a_child_left_running_in_the_jobs_group_is_not_an_ended_job(box: Box) -> None:
    session = box.launch("sh", "-c", LINGER)
    wait_until(lambda: "exit_status" in _status(session), "the wrapper did not end")
    box.pull(box.run, "results")
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 1
    [left] = errors(doc)["RC806"]
    assert "left 1 process(es) running" in left["message"]
    os.killpg(int(_status(session)["pgid"]), signal.SIGKILL)
    wait_until(
        lambda: box.teardown("results", "--host", "box", *box.ssh)[0] == 0,
        "teardown did not pass once the group was gone",
    )


def test_unknown_is_not_ended_manifest_now_and_a_launch_without_start_time(
    box: Box, tmp_path: Path
) -> None:
    session = box.job()
    box.finish(session)
    box.pull(box.run, "results")
    now = tmp_path / "now.json"  # the roster as rebuilt on the box an hour later
    doc = json.loads((box.project / "results" / "PULL_MANIFEST.json").read_text())
    built = datetime.datetime.fromisoformat(doc["created_at"])
    doc["created_at"] = (built + datetime.timedelta(hours=1)).isoformat()
    doc["run_id"] = "rebuilt"
    now.write_text(json.dumps(doc))
    code, doc = box.teardown("results", "--manifest-now", str(now))
    unproved = errors(doc)["RC808"]
    assert code == 1 and {r["details"].get("session") for r in unproved} == {session}
    assert any("--manifest-now says nothing about processes" in r["message"] for r in unproved)
    # A ledger line for this box whose launch recorded a pid but no start time: that pid
    # cannot be told apart from a recycled one, so the job is not proved ended.
    ledger = box.project / ".rentcheck" / "ledger.jsonl"
    [launch] = [
        e for e in map(json.loads, ledger.read_text().splitlines()) if e["gate"] == "launch"
    ]
    launch["evidence"] = {"session": "old", "pid": str(os.getpid())}
    with ledger.open("a") as handle:
        handle.write(json.dumps(launch) + "\n")
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 1 and set(errors(doc)) == {"RC808"}
    [old] = errors(doc)["RC808"]
    assert "job old" in old["message"] and "no pid and start time" in old["message"]


def test_a_passed_teardown_ends_the_boxs_record(box: Box) -> None:
    session = box.job(ckpt=str(box.run.parent / "elsewhere"))
    box.finish(session)
    box.pull(box.run.parent, "all")
    assert box.teardown("all", "--host", "box", *box.ssh)[0] == 0
    # The alias is reused for a new rental: the old launch is not held against it.
    box.pull(box.run, "results")
    code, doc = box.teardown("results", "--host", "box", *box.ssh)
    assert code == 0, doc["results"]
    assert doc["teardown"]["jobs_recorded"] == 0


def test_a_job_launched_from_another_project_is_found_on_the_box(
    box: Box, cli: Any, tmp_path: Path
) -> None:
    session = box.job()  # launched from box.project: its ledger, not the one below
    other = tmp_path / "other-project"
    other.mkdir()
    pulled = cli("pull", f"box:{box.run}", "results", *box.ssh, cwd=other)
    assert pulled.code == 0, pulled.out + pulled.err
    teardown = (
        "teardown", "--host", "box", *box.ssh, "--verified", "results", "--profile", "runpod",
        "--approve", "--output-format", "json",
    )  # fmt: skip
    res = cli(*teardown, cwd=other)
    doc = json.loads(res.out)
    assert res.code == 1 and set(errors(doc)) == {"RC806"}
    [found] = errors(doc)["RC806"]
    assert f"job {session}" in found["message"] and found["details"]["source"] == "box"
    assert doc["teardown"]["jobs_recorded"] == 0 and doc["teardown"]["box_processes_checked"]
    box.finish(session)
    assert cli("pull", f"box:{box.run}", "results", *box.ssh, cwd=other).code == 0
    assert cli(*teardown, cwd=other).code == 0


def test_a_process_rentcheck_did_not_start_writing_under_the_root_refuses(box: Box) -> None:
    log = box.run / "train.log"
    log.write_text("step=1\n")
    box.pull(box.run, "results")
    # Started by hand (no launch, no ledger line): it holds the log open to append.
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'a')\n"
         "print('open', flush=True)\ntime.sleep(600)\n", str(log)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "open\n"
        code, doc = box.teardown("results", "--host", "box", *box.ssh)
        assert code == 1 and set(errors(doc)) == {"RC809"}
        [held] = errors(doc)["RC809"]
        assert held["details"]["pid"] == writer.pid and held["path"] == str(log)
        assert f"kill -TERM {writer.pid}" in held["message"]
    finally:
        writer.kill()
        writer.wait()
    assert box.teardown("results", "--host", "box", *box.ssh)[0] == 0


def test_a_checkpoint_dir_only_a_watch_saw_outside_the_pulled_root_refuses_until_pulled(
    box: Box, cli: Any, tmp_path: Path
) -> None:
    outside = box.run.parent / "ckpt-watched"
    session = box.job(ckpt=str(outside))  # launched from box.project: not the ledger below
    other = tmp_path / "other-project"
    other.mkdir()
    # Here only a watch has seen the job: it records where the box says it saves.
    watched = cli("watch", "--host", "box", *box.ssh, "--session", session, cwd=other)
    assert "ckpt" in watched.out, watched.out + watched.err
    ledger = other / ".rentcheck" / "ledger.jsonl"
    [watch] = [e for e in map(json.loads, ledger.read_text().splitlines())]
    assert watch["gate"] == "watch" and watch["evidence"]["checkpoint_dir"] == str(outside)
    assert watch["evidence"]["newest_checkpoint"] == str(outside / "step_1.txt")
    box.finish(session)

    def teardown(local: str) -> tuple[int, dict[str, Any]]:
        res = cli(
            "teardown", "--host", "box", *box.ssh, "--verified", local, "--profile", "runpod",
            "--approve", "--output-format", "json", cwd=other,
        )  # fmt: skip
        assert res.code in (0, 1), res.out + res.err
        return res.code, json.loads(res.out)

    assert cli("pull", f"box:{box.run}", "results", *box.ssh, cwd=other).code == 0
    code, doc = teardown("results")
    assert code == 1 and set(errors(doc)) == {"RC807"}
    [named] = errors(doc)["RC807"]  # the newest checkpoint inside it is not named twice
    assert named["path"] == str(outside) and "recorded by watch" in named["message"]
    assert f"rentcheck pull box:{box.run.parent} LOCAL_ROOT" in named["message"]
    assert doc["teardown"]["paths_recorded"] == 2

    assert cli("pull", f"box:{box.run.parent}", "everything", *box.ssh, cwd=other).code == 0
    code, doc = teardown("everything")
    assert code == 0, doc["results"]
    assert (doc["teardown"]["paths_recorded"], doc["teardown"]["paths_covered"]) == (2, 2)


def test_a_watch_run_as_a_pytest_item_records_the_checkpoint_dir_teardown_then_refuses(
    box: Box, tmp_path: Path
) -> None:
    outside = box.run.parent / "ckpt-watched"
    session = box.job(ckpt=str(outside))  # launched from box.project: not the ledger below
    other = tmp_path / "other-project"
    other.mkdir()
    (other / "pytest.ini").write_text("[pytest]\n")
    # Here the ledger knows the launch by its session only (no pid, no checkpoint dir): the
    # watch item's prerequisite and the session it watches. Only the watch sees where it saves.
    launched = {"schema": LEDGER_SCHEMA, "gate": "launch", "verdict": "pass", "host": "box"}
    append_entry(
        str(other), {**launched, "unix_time": time.time(), "evidence": {"session": session}}
    )
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
         "-v", "--rentcheck-gate", "watch", "-k", "watch", "--rentcheck-audit", "box",
         f"--rentcheck-ssh-config={box.lab.ssh_config}"],
        cwd=other, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "rentcheck-watch[box]" in ran.stdout, ran.stdout + ran.stderr
    ledger = other / ".rentcheck" / "ledger.jsonl"
    [watch] = [e for e in map(json.loads, ledger.read_text().splitlines()) if e["gate"] == "watch"]
    assert watch["via"] == "pytest" and watch["host"] == "box"
    assert watch["evidence"]["checkpoint_dir"] == str(outside)
    assert watch["evidence"]["session"] == session
    box.finish(session)

    box.pull(box.run, "results", project=other)
    code, doc = box.teardown("results", "--host", "box", *box.ssh, project=other)
    assert code == 1 and set(errors(doc)) == {"RC807"}, doc["results"]
    [named] = errors(doc)["RC807"]
    assert named["path"] == str(outside) and "recorded by watch" in named["message"]
    box.pull(box.run.parent, "everything", project=other)
    code, doc = box.teardown("everything", "--host", "box", *box.ssh, project=other)
    assert code == 0, doc["results"]

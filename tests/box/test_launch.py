"""``rentcheck launch`` / ``launch-check`` / ``watch`` against real processes, tmux and a real
sshd on loopback: the job outlives its SSH session, dies loudly, stalls visibly."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sshdkit import SshLab, wait_until

JOB = r"""
import os, sys, time
steps, pause, stall_at = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
os.makedirs("ckpt", exist_ok=True)
print("token present:", bool(os.environ.get("RC_TEST_TOKEN")))
for i in range(1, steps + 1):
    print("step=%d loss=%.4f" % (i, 1.0 / i))
    with open("ckpt/latest.tmp", "w") as f:
        f.write(str(i))
    os.replace("ckpt/latest.tmp", "ckpt/latest.pt")
    if i == stall_at:
        time.sleep(3600)  # alive, silent: the stall the watch must see
    time.sleep(pause)
print("done")
"""


def _status(home: Path, session: str) -> dict[str, str]:
    text = (home / ".rentcheck" / "jobs" / session / "status").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class Jobs:
    """Launches in a scratch project; every job and tmux session is stopped at the end."""

    def __init__(self, cli: Any, project: Path, home: Path, lab: SshLab | None) -> None:
        self.cli, self.project, self.home, self.lab = cli, project, home, lab
        self.sessions: list[str] = []

    def new_session(self) -> str:
        session = "t" + uuid.uuid4().hex[:10]
        self.sessions.append(session)
        return session

    def host_args(self, host: str) -> list[str]:
        return ["--host", host] + (["--ssh-config", str(self.lab.ssh_config)] if self.lab else [])

    def launch(self, host: str, session: str, *argv: str, extra: tuple[str, ...] = ()) -> Any:
        return self.cli(
            "launch",
            *self.host_args(host),
            "--session",
            session,
            "--cwd",
            str(self.project),
            "--ckpt-dir",
            "ckpt",
            "--force",
            "--reason",
            "test",
            *extra,
            "--",
            *argv,
            cwd=self.project,
        )

    def job(  # noqa: PLR0917 - a test helper's knobs
        self,
        host: str,
        session: str,
        steps: int = 400,
        pause: float = 0.05,
        stall_at: int = 0,
        extra: tuple[str, ...] = (),
    ) -> Any:
        return self.launch(
            host,
            session,
            sys.executable,
            "job.py",
            str(steps),
            str(pause),
            str(stall_at),
            extra=extra,
        )

    def watch(self, host: str, session: str, *extra: str) -> Any:
        return self.cli(
            "watch", *self.host_args(host), "--session", session, *extra, cwd=self.project
        )

    def status(self, session: str) -> dict[str, str]:
        return _status(self.home, session)

    def stop(self) -> None:
        for session in self.sessions:
            try:
                pgid = int(self.status(session)["pgid"])
                os.killpg(pgid, signal.SIGKILL)
            except (OSError, KeyError, ValueError):
                pass
            subprocess.run(
                ["tmux", "kill-session", "-t", f"={session}"], capture_output=True, check=False
            )


@pytest.fixture
def local_jobs(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Jobs]:
    """``--host local`` with its own HOME and its own tmux server."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    (project / "job.py").write_text(JOB)
    jobs = Jobs(cli, project, home, None)
    yield jobs
    jobs.stop()
    subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)


@pytest.fixture
def ssh_jobs(cli, lab: SshLab, tmp_path: Path) -> Iterator[Jobs]:
    """The loopback box (it logs in as this user, so its HOME is this HOME)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "job.py").write_text(JOB)
    jobs = Jobs(cli, project, Path(pwd.getpwuid(os.getuid()).pw_dir), lab)
    yield jobs
    jobs.stop()


def _results(out: str) -> list[dict[str, Any]]:
    return list(json.loads(out)["results"])


def test_launch_refuses_before_starting_anything_when_prerequisites_are_missing(
    local_jobs: Jobs,
) -> None:
    session = local_jobs.new_session()
    res = local_jobs.cli(
        "launch",
        "--host",
        "local",
        "--session",
        session,
        "--output-format",
        "json",
        "--",
        sys.executable,
        "job.py",
        cwd=local_jobs.project,
    )
    assert res.code == 1
    missing = {r["details"]["requires"] for r in _results(res.out) if r["code"] == "RC910"}
    assert {"lint", "smoke", "audit"} <= missing
    assert not (local_jobs.home / ".rentcheck" / "jobs" / session).exists()


def test_launch_detaches_with_a_private_env_file_and_records_the_launch(
    local_jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RC_TEST_TOKEN", "s3cret-value")
    monkeypatch.setenv("RC_NOT_NAMED", "must-not-travel")
    session = local_jobs.new_session()
    res = local_jobs.job("local", session, extra=("--env", "RC_TEST_TOKEN"))
    assert res.code == 0, res.out + res.err
    assert "first step: step=1 loss=1.0000" in res.out
    status = local_jobs.status(session)
    pid = int(status["pid"])
    assert _alive(pid) and status["sid"] == status["pid"] == status["pgid"]
    jobdir = local_jobs.home / ".rentcheck" / "jobs" / session
    assert stat.S_IMODE(jobdir.stat().st_mode) == 0o700
    assert stat.S_IMODE((jobdir / "env").stat().st_mode) == 0o600
    assert "s3cret-value" in (jobdir / "env").read_text()
    # The secret is in no process's argv; the job got it, PYTHONUNBUFFERED and /dev/null.
    children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    [child] = children
    for proc in (pid, child):
        assert b"s3cret" not in Path(f"/proc/{proc}/cmdline").read_bytes()
    environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
    assert b"PYTHONUNBUFFERED=1" in environ and b"RC_TEST_TOKEN=s3cret-value" in environ
    assert not any(e.startswith(b"RC_NOT_NAMED=") for e in environ)
    assert os.readlink(f"/proc/{child}/fd/0") == "/dev/null"
    assert "token present: True" in Path(status["log"]).read_text()
    ledger = (local_jobs.project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    entry = json.loads(ledger[-1])
    assert entry["gate"] == "launch" and entry["host"] == "local"
    evidence = entry["evidence"]
    assert evidence["pid"] == status["pid"] and evidence["log"] == status["log"]
    assert evidence["command_sha256"] == status["command_sha256"]
    assert evidence["checkpoint_dir"] == str(local_jobs.project / "ckpt")
    assert evidence["started_at"] == status["started_at"]
    # The same session cannot be launched twice while it runs.
    again = local_jobs.job("local", session)
    assert again.code == 2 and "still running" in again.err


def test_over_ssh_the_job_survives_its_killed_session_then_watch_sees_it_die(
    ssh_jobs: Jobs, lab: SshLab
) -> None:
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.transport import close_all, open_box

    session = ssh_jobs.new_session()
    plan = LaunchPlan(
        session=session,
        argv=(sys.executable, "job.py", "4000", "0.05", "0"),
        cwd=str(ssh_jobs.project),
        ckpt_dir="ckpt",
    )
    box = open_box("box", ssh_config=str(lab.ssh_config))
    launched = start_job(box, plan, {})
    pid = launched.pid
    status = ssh_jobs.status(session)
    # The connection that started the job is still open: kill its sshd session processes
    # hard, as a dropped network or a closed laptop would.
    master = lab.box.proc.pid
    sessions = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    assert sessions
    for child in sessions:
        os.kill(int(child), signal.SIGKILL)
    close_all()
    time.sleep(0.5)
    assert _alive(pid) and int(status["pid"]) == pid
    check = ssh_jobs.cli(
        "launch-check",
        *ssh_jobs.host_args("box"),
        "--session",
        session,
        "--force",
        "--reason",
        "test",
        cwd=ssh_jobs.project,
    )
    assert check.code == 0, check.out
    first = ssh_jobs.watch("box", session)
    assert first.code == 0, first.out
    time.sleep(0.6)
    second = ssh_jobs.watch("box", session, "--output-format", "json")
    assert second.code == 0, second.out
    line = second.err.strip().splitlines()[0]
    assert " box step " in line and line.endswith("OK") and "(+" in line and "ckpt" in line
    advanced = int(line.split("(+")[1].split(")")[0])
    assert advanced > 0
    os.killpg(int(status["pgid"]), signal.SIGKILL)
    wait_until(lambda: not _alive(pid), "the job did not die")
    dead = ssh_jobs.watch("box", session, "--output-format", "json")
    assert dead.code == 3, dead.out
    [gone] = [r for r in _results(dead.out) if r["code"] == "RC350"]
    assert "no exit status" in gone["message"] and "the log last changed" in gone["message"]
    assert "step=" in gone["message"] and "ckpt/latest.pt" in gone["message"]


def test_a_killed_job_under_its_wrapper_reports_its_exit_status(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session, extra=("--detach", "setsid")).code == 0
    pid = int(local_jobs.status(session)["pid"])
    [child] = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    os.kill(int(child), signal.SIGKILL)
    wait_until(lambda: "exit_status" in local_jobs.status(session), "no exit status recorded")
    res = local_jobs.watch("local", session, "--output-format", "json")
    assert res.code == 3
    [failed] = [r for r in _results(res.out) if r["code"] == "RC351"]
    assert "exited with status 137" in failed["message"] and "at step" in failed["message"]


def test_watch_never_counts_itself_or_a_lookalike(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session).code == 0
    status = local_jobs.status(session)
    os.killpg(int(status["pgid"]), signal.SIGKILL)
    wait_until(lambda: not _alive(int(status["pid"])), "the job did not die")
    # A process whose command line names the job and its session, as `pgrep -f` would match
    # (the watch's own probe carries the session name in its argv too).
    decoy = subprocess.Popen(["sh", "-c", f"sleep 60 # {sys.executable} job.py {session}"])
    try:
        res = local_jobs.watch("local", session, "--output-format", "json")
    finally:
        decoy.kill()
        decoy.wait()
    assert res.code == 3 and "RC350" in {r["code"] for r in _results(res.out)}


def test_a_finished_job_reports_status_and_step_and_a_fast_finish_is_bad(
    local_jobs: Jobs,
) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session, steps=3, pause=0.01).code in (0, 1)
    wait_until(lambda: "exit_status" in local_jobs.status(session), "did not finish")
    ok = local_jobs.watch("local", session, "--output-format", "json")
    assert ok.code == 0, ok.out
    [done] = [r for r in _results(ok.out) if r["code"] == "RC353"]
    assert "status 0" in done["message"] and "at step 3" in done["message"]
    assert ok.err.strip().endswith("FINISHED")
    fast = local_jobs.watch("local", session, "--expected-duration", "1h")
    assert fast.code == 3 and "RC352" in fast.out


def test_a_silent_job_turns_degraded_after_the_stall_bound(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session, steps=10, stall_at=2).code == 0
    assert local_jobs.watch("local", session).code == 0
    time.sleep(1.5)
    res = local_jobs.watch("local", session, "--stall-after", "1s", "--output-format", "json")
    assert res.code == 1, res.out
    assert "RC354" in {r["code"] for r in _results(res.out)}
    assert res.err.strip().endswith("DEGRADED")


def test_launch_check_fails_on_a_traceback_and_on_no_step_line(local_jobs: Jobs) -> None:
    crash = local_jobs.new_session()
    (local_jobs.project / "crash.py").write_text("import nonexistent_module_xyz\n")
    res = local_jobs.launch(
        "local", crash, sys.executable, "crash.py", extra=("--output-format", "json")
    )
    assert res.code == 1
    codes = {r["code"] for r in _results(res.out)}
    assert {"RC333", "RC334"} <= codes
    quiet = local_jobs.new_session()
    res = local_jobs.launch(
        "local",
        quiet,
        "sleep",
        "30",
        extra=("--first-step-timeout", "1", "--output-format", "json"),
    )
    assert res.code == 1 and "RC332" in {r["code"] for r in _results(res.out)}


def test_hung_log_and_hung_nvidia_smi_are_findings_within_the_timeout(
    local_jobs: Jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session, steps=2, pause=0.01).code in (0, 1)
    wait_until(lambda: "exit_status" in local_jobs.status(session), "did not finish")
    log = Path(local_jobs.status(session)["log"])
    log.unlink()
    os.mkfifo(log)  # reading it blocks forever, as a file on a hung mount does
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nsleep 600\n")
    (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    res = local_jobs.watch("local", session, "--timeout", "8", "--output-format", "json")
    # A RemoteTimeout (the server-side limit firing) would be exit 2: this answered in time.
    assert res.code == 1, res.out + res.err
    stuck = {r["message"].split(":")[0] for r in _results(res.out) if r["code"] == "RC359"}
    assert {"log", "nvidia-smi"} <= stuck


def test_a_script_being_edited_in_place_blocks_the_launch(local_jobs: Jobs, running_script) -> None:
    script = local_jobs.project / "run.sh"
    script.write_text("#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.05; done\necho v1\n")
    proc = running_script(script)
    with open(script, "r+") as handle:  # in place, same inode
        handle.write("#!/bin/bash\n# edited\n")
    session = local_jobs.new_session()
    res = local_jobs.launch("local", session, "bash", "run.sh", extra=("--output-format", "json"))
    (local_jobs.project / "go").touch()
    proc.communicate(timeout=30)
    assert res.code == 1, res.out
    assert "RC401" in {r["code"] for r in _results(res.out)}
    assert not (local_jobs.home / ".rentcheck" / "jobs" / session).exists()


def test_watch_appends_jsonl_and_notifies_only_on_change(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session).code == 0
    events = local_jobs.project / "events.jsonl"
    seen = local_jobs.project / "seen.txt"
    hook = f"cat >> {seen}; echo >> {seen}"
    for _ in range(2):
        assert (
            local_jobs.watch("local", session, "--jsonl", str(events), "--on-change", hook).code
            == 0
        )
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["health"] for e in lines] == ["OK", "OK"]
    assert [e["changed"] for e in lines] == [True, False]
    notified = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert len(notified) == 1 and notified[0]["session"] == session
    state = local_jobs.project / ".rentcheck" / "watch" / f"local-{session}.json"
    assert json.loads(state.read_text())["health"] == "OK"


def test_pytest_runs_the_launch_and_watch_gates_through_the_table(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.transport import LocalBox
    from rentcheck.config import load_config
    from rentcheck.gates.evidence import project_files
    from rentcheck.ledger import LEDGER_SCHEMA, append_entry

    outside = tmp_path_factory.mktemp("box")  # pytester's project is tmp_path itself
    home = outside / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMUX_TMPDIR", str(outside))
    session = "t" + uuid.uuid4().hex[:10]
    pytester.makefile(".ini", pytest="[pytest]\n")  # its subprocess runs write stdout/stderr here
    pytester.makefile(
        ".yaml",
        rentcheck=f"extend-exclude: [stdout, stderr]\nlaunch:\n  session: {session}\n"
        "audit:\n  expect_gpu: false\n",
    )
    rundir = outside / "run"  # outside the project: its checkpoints must not change the digest
    rundir.mkdir()
    (rundir / "job.py").write_text(JOB)
    root = str(pytester.path)
    digest = project_files(load_config(root)).digest
    for gate, extra in (("lint", {"digest": digest}), ("smoke", {"digest": digest}),
                        ("audit", {"host": "local"})):  # fmt: skip
        entry = {"schema": LEDGER_SCHEMA, "gate": gate, "verdict": "pass"}
        append_entry(root, {**entry, "unix_time": time.time(), **extra})
    plan = LaunchPlan(session=session, argv=(sys.executable, "job.py", "4000", "0.05", "0"),
                      cwd=str(rundir), ckpt_dir="ckpt")  # fmt: skip
    launched = start_job(LocalBox(), plan, {})
    fast = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-v")
    try:
        wait_until(lambda: "step=1" in Path(launched.log).read_text(), "no first step")
        gated = pytester.runpytest_subprocess(
            *fast, "--rentcheck-gate", "launch", "-k", "launch", "--rentcheck-audit", "local"
        )
        gated.stdout.fnmatch_lines(["*rentcheck-launch?local? PASSED*"])
        watched = pytester.runpytest_subprocess(
            *fast, "--rentcheck-gate", "watch", "-k", "watch", "--rentcheck-audit", "local"
        )
        watched.stdout.fnmatch_lines(["*rentcheck-watch?local? PASSED*"])
        os.killpg(launched.pgid, signal.SIGKILL)
        wait_until(lambda: not _alive(launched.pid), "the job did not die")
        dead = pytester.runpytest_subprocess(
            *fast, "--rentcheck-gate", "watch", "-k", "watch", "--rentcheck-audit", "local"
        )
        dead.stdout.fnmatch_lines(["*rentcheck-watch?local? FAILED*", "*RC350*"])
    finally:
        with contextlib.suppress(OSError):
            os.killpg(launched.pgid, signal.SIGKILL)
        subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)


def test_tinytrain_on_the_loopback_box_runs_detached_and_is_watched_to_its_end(
    ssh_jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    tinytrain = Path(__file__).resolve().parents[2] / "examples" / "tinytrain"
    ckpt = ssh_jobs.project / "ckpt"
    monkeypatch.setenv("PYTHON", sys.executable)  # the box is this machine: torch is here
    monkeypatch.setenv("TINYTRAIN_CKPT_DIR", str(ckpt))
    session = ssh_jobs.new_session()
    res = ssh_jobs.launch(
        "box", session, "bash", str(tinytrain / "run.sh"), "--steps", "30", "--ckpt-every", "5",
        "--sleep-per-step", "0.05",
        extra=("--env", "PYTHON", "--env", "TINYTRAIN_CKPT_DIR", "--ckpt-dir", str(ckpt)),
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    assert "first step: step=1 loss=" in res.out
    assert ssh_jobs.watch("box", session).code == 0
    wait_until(lambda: "exit_status" in ssh_jobs.status(session), "tinytrain did not finish", 120)
    done = ssh_jobs.watch("box", session, "--output-format", "json")
    assert done.code == 0, done.out
    [finished] = [r for r in _results(done.out) if r["code"] == "RC353"]
    assert "at step 30" in finished["message"] and "ckpt" in finished["message"]


def test_every_repeats_within_for_and_stops_at_death(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    assert local_jobs.job("local", session).code == 0
    events = local_jobs.project / "every.jsonl"
    res = local_jobs.watch("local", session, "--every", "1s", "--for", "1.5s",
                           "--jsonl", str(events))  # fmt: skip
    assert res.code == 0 and len(events.read_text().splitlines()) == 2
    assert res.out.count(" OK\n") == 2  # one status line per call
    os.killpg(int(local_jobs.status(session)["pgid"]), signal.SIGKILL)
    wait_until(lambda: not _alive(int(local_jobs.status(session)["pid"])), "did not die")
    res = local_jobs.watch("local", session, "--every", "1s", "--for", "1h",
                           "--jsonl", str(events))  # fmt: skip
    assert res.code == 3 and len(events.read_text().splitlines()) == 3


def test_box_text_in_the_status_line_and_findings_is_escaped(local_jobs: Jobs) -> None:
    session = local_jobs.new_session()
    (local_jobs.project / "evil.py").write_text(
        "print('step=1 loss=1 \\x1b]0;pwned\\x07 \\x1b[2J')\nraise SystemExit(1)\n"
    )
    local_jobs.launch("local", session, sys.executable, "evil.py")
    wait_until(lambda: "exit_status" in local_jobs.status(session), "did not exit")
    res = local_jobs.watch("local", session)
    assert res.code == 3 and "\x1b" not in res.out and "\x07" not in res.out


def test_gate_launch_hands_the_command_and_its_options_over(local_jobs: Jobs) -> None:
    res = local_jobs.cli(
        "gate", "launch", "--host", "local", "--force", "--reason", "test", "--",
        sys.executable, "-u", "job.py", "3", "0.01", "0", cwd=local_jobs.project,
    )  # fmt: skip
    assert res.code in (0, 1), res.err  # 1: it may have finished within the check
    assert "launched on local" in res.out
    [job] = (local_jobs.home / ".rentcheck" / "jobs").iterdir()
    local_jobs.sessions.append(job.name)
    assert "-u job.py 3" in (job / "wrapper").read_text()

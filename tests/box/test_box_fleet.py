"""A fleet in pytest: the ``[tool.rentcheck.hosts]`` inventory gives one audit item per host;
under ``-n 4 --dist loadgroup`` each host is audited over one SSH connection, and a host that
fails (unreachable, budget too small) fails only its own item."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshdkit import Sshd, SshLab, keygen, start_sshd, wait_until

from rentcheck.box.fleet import Host, inventory, select_hosts
from rentcheck.config import load_config
from rentcheck.errors import ConfigError, UsageError

FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
NAMES = ("h1", "h2", "h3-small", "h4-down")


@pytest.fixture
def fleet(lab: SshLab, tmp_path: Path) -> Iterator[tuple[dict[str, Sshd], Path]]:
    """Four real sshd on 127.0.0.1 (h4-down is stopped before the run), with an ssh_config."""
    servers: dict[str, Sshd] = {}
    known, blocks = [], []
    try:
        for name in NAMES:
            pub = keygen(tmp_path / f"{name}_host")
            servers[name] = start_sshd(
                tmp_path / name, lab.root, name, tmp_path / f"{name}_host", pub
            )
            known.append(f"[127.0.0.1]:{servers[name].port} {pub}")
        (tmp_path / "known_hosts").write_text("\n".join(known) + "\n")
        for name, server in servers.items():
            blocks.append(lab.host_block(name, server.port, tmp_path / "known_hosts"))
        ssh_config = tmp_path / "ssh_config"
        ssh_config.write_text("\n".join(blocks))
        servers["h4-down"].stop()
        yield servers, ssh_config
    finally:
        for server in servers.values():
            server.stop()


PYPROJECT = """
[tool.pytest.ini_options]

[tool.rentcheck.audit]
expect_gpu = false
# the "boxes" are this machine: other tests' live scripts are not what these tests judge
script_roots = ["/nonexistent/rentcheck-fleet-test"]

[tool.rentcheck.hosts.h1]
tags = ["spot"]

[tool.rentcheck.hosts.h2]
tags = ["spot", "a100"]

[tool.rentcheck.hosts.h3-small]
tags = ["spot"]
paths = { data = "/" }
budget = { checkpoint_bytes = "9000TiB" }

[tool.rentcheck.hosts.h4-down]
tags = ["a100"]
"""


def test_four_hosts_under_xdist(
    pytester: pytest.Pytester, fleet: tuple[dict[str, Sshd], Path]
) -> None:
    servers, ssh_config = fleet
    pytester.makefile(".toml", pyproject=PYPROJECT)
    result = pytester.runpytest_subprocess(
        *FAST, "-n", "4", "--dist", "loadgroup", "--rentcheck-gate", "audit",
        "--rentcheck-hosts", "all", f"--rentcheck-ssh-config={ssh_config}", "-rf",
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    # -rf names only failures: the two good hosts must not appear.
    assert "rentcheck-audit[h1]" not in out and "rentcheck-audit[h2]" not in out
    result.stdout.fnmatch_lines(["*h3-small: RC301 data=/: * free on /, below the budget*"])
    result.stdout.fnmatch_lines(
        ["rentcheck-audit?h4-down?: cannot reach h4-down (127.0.0.1:*): connection refused*"]
    )
    assert "Traceback" not in out
    summary = [line for line in out.splitlines() if line.startswith("rentcheck audit gate:")]
    assert summary == ["rentcheck audit gate: FAILED (2 failed, 2 passed)"]
    for name in ("h1", "h2", "h3-small"):
        assert servers[name].log_text().count("Accepted publickey") == 1, name
    assert "Accepted publickey" not in servers["h4-down"].log_text()


def test_tag_and_k_pick_hosts(
    pytester: pytest.Pytester, fleet: tuple[dict[str, Sshd], Path]
) -> None:
    _, ssh_config = fleet
    pytester.makefile(".toml", pyproject=PYPROJECT)
    tagged = pytester.runpytest_subprocess(
        *FAST, "--rentcheck-hosts", "a100", f"--rentcheck-ssh-config={ssh_config}", "-v"
    )
    tagged.assert_outcomes(passed=1, failed=1)  # h2 and h4-down
    picked = pytester.runpytest_subprocess(
        *FAST, "--rentcheck-hosts", "all", "-k", "h2", f"--rentcheck-ssh-config={ssh_config}"
    )
    picked.assert_outcomes(passed=1)
    unknown = pytester.runpytest_subprocess(*FAST, "--rentcheck-hosts", "h100")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(
        ["*--rentcheck-hosts: --hosts h100: no host has that name or tag*"]
    )


def test_inventory_is_validated(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text(
        "hosts:\n  a: {alias: box-a, tags: [spot]}\n  b: {budget: {keep: 2}}\n"
    )
    hosts = inventory(load_config(str(tmp_path)))
    assert hosts == (
        Host("a", "box-a", ("spot",), {}),
        Host("b", "b", (), {"budget": {"keep": 2}}),
    )
    assert [h.name for h in select_hosts(hosts, ["spot", "b"])] == ["a", "b"]
    with pytest.raises(UsageError, match="no host has that name or tag"):
        select_hosts(hosts, ["gpu"])
    (tmp_path / "rentcheck.yaml").write_text("hosts:\n  a: {budgte: 1}\n")
    with pytest.raises(ConfigError, match=r"hosts\.a\.budgte .*unknown key"):
        inventory(load_config(str(tmp_path)))


JOB = """
import time
for i in range(1, 100000):
    print("step=%d loss=%.4f" % (i, 1.0 / i), flush=True)
    time.sleep(0.05)
"""


def _worker_of(out: str) -> dict[str, str]:
    """item name -> the xdist worker that ran it, from ``-v`` lines ``[gw1] ... PASSED X``."""
    found = {}
    for line in out.splitlines():
        match = re.match(r"\[(gw\d+)\] .*(?:PASSED|FAILED) ::(rentcheck-\w+\[[\w-]+\])", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def test_every_box_gate_is_an_item_per_host_on_one_connection(
    pytester: pytest.Pytester,
    fleet: tuple[dict[str, Sshd], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """audit and watch x four hosts under -n 4 --dist loadgroup: the items of one host run on
    one worker over one SSH connection; the watch of a live job passes on every reachable host
    (they are all this machine), the unreachable host fails both of its items with its reason;
    the controller alone writes one ledger line per gate x host, by inventory name."""
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.transport import LocalBox
    from rentcheck.ledger import LEDGER_SCHEMA, append_entry

    servers, ssh_config = fleet
    session = "t" + uuid.uuid4().hex[:10]
    pytester.makefile(
        ".toml", pyproject=PYPROJECT + f'\n[tool.rentcheck.watch]\nsession = "{session}"\n'
    )
    for name in NAMES:  # each host's launch is on record (the watch gate requires it)
        entry = {"schema": LEDGER_SCHEMA, "gate": "launch", "verdict": "pass", "host": name}
        append_entry(str(pytester.path), {**entry, "unix_time": time.time()})
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "job.py").write_text(JOB)
    plan = LaunchPlan(session=session, argv=(sys.executable, "job.py"), cwd=str(rundir),
                      ckpt_dir="ckpt")  # fmt: skip
    # The servers log in as this user, in the HOME of the passwd entry (pytester moved this
    # process's HOME). Started here, not over SSH: pytester drops modules first imported
    # during the test, and cryptography does not survive being imported twice.
    with monkeypatch.context() as env:
        env.setenv("HOME", pwd.getpwuid(os.getuid()).pw_dir)
        launched = start_job(LocalBox(), plan, {})
    try:
        wait_until(lambda: "step=2" in Path(launched.log).read_text(), "no first steps")
        result = pytester.runpytest_subprocess(
            *FAST, "-n", "4", "--dist", "loadgroup", "-v", "--rentcheck-gate", "audit",
            "--rentcheck-gate", "watch", "--rentcheck-hosts", "all",
            f"--rentcheck-ssh-config={ssh_config}",
        )  # fmt: skip
    finally:
        with contextlib.suppress(OSError):
            os.killpg(launched.pgid, signal.SIGKILL)
        subprocess.run(["tmux", "kill-session", "-t", f"={session}"], capture_output=True,
                       check=False)  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(passed=5, failed=3)
    result.stdout.fnmatch_lines(["*FAILED ::rentcheck-audit?h3-small?*"])
    for gate in ("audit", "watch"):
        result.stdout.fnmatch_lines(
            [f"rentcheck-{gate}?h4-down?: cannot reach h4-down (127.0.0.1:*): connection refused*"]
        )
    summary = [line for line in out.splitlines() if line.startswith("rentcheck ")]
    assert summary == [
        "rentcheck audit gate: FAILED (2 failed, 2 passed)",
        "rentcheck watch gate: FAILED (1 failed, 3 passed)",
    ]
    workers = _worker_of(out)
    assert len(workers) == 8, out
    for name in NAMES:
        assert workers[f"rentcheck-audit[{name}]"] == workers[f"rentcheck-watch[{name}]"], name
        # ... and in lifecycle order there: the box is audited before the job is watched.
        assert out.index(f"ED ::rentcheck-audit[{name}]") < out.index(
            f"ED ::rentcheck-watch[{name}]"
        ), name
    for name in ("h1", "h2", "h3-small"):  # audit and watch shared one login
        assert servers[name].log_text().count("Accepted publickey") == 1, name
    ledger = (pytester.path / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    recorded = sorted(
        (e["gate"], e["host"], e["verdict"])
        for e in map(json.loads, ledger)
        if e["gate"] != "launch"
    )
    assert recorded == sorted(
        [("audit", "h1", "pass"), ("audit", "h2", "pass"), ("audit", "h3-small", "fail"),
         ("audit", "h4-down", "fail"), ("watch", "h1", "pass"), ("watch", "h2", "pass"),
         ("watch", "h3-small", "pass"), ("watch", "h4-down", "fail")]
    )  # fmt: skip
    assert all(json.loads(e)["via"] == "pytest" for e in ledger if '"launch"' not in e)
    # Each watch's evidence crossed from its xdist worker to the controller, which wrote it:
    # the session the box named (and where it saves), as `rentcheck watch` records it.
    watched = [
        e for e in map(json.loads, ledger) if e["gate"] == "watch" and e["verdict"] == "pass"
    ]
    assert [e["evidence"].get("session") for e in watched] == [session] * 3, watched
    states = sorted(p.name for p in (pytester.path / ".rentcheck" / "watch").iterdir())
    assert states == [f"{name}-{session}.json" for name in ("h1", "h2", "h3-small")]


def test_a_hosts_select_and_ignore_judge_each_of_its_gates(tmp_path: Path) -> None:
    from rentcheck.box.fleet import host_config
    from rentcheck.gates.judge import selection_of

    (tmp_path / "rentcheck.yaml").write_text(
        "audit: {ignore: [RC305]}\n"
        "hosts:\n"
        "  a: {ignore: [RC301, RC353, RC510], select: [RC3]}\n"
        "  b: {tags: [spot]}\n"
    )
    config = load_config(str(tmp_path))
    a, b = inventory(config)
    judged = host_config(config, a)
    audit = selection_of(judged, "audit")
    assert audit.ignore == ("RC305", "RC301") and audit.select == ("RC3",)  # added; replaced
    watch = selection_of(judged, "watch")
    assert watch.ignore == ("RC353",) and watch.select == ("RC3",)  # RC3 names watch codes too
    for section in ("pull", "verify"):  # the pull gate and the verify it runs
        assert selection_of(judged, section).ignore == ("RC510",)
        assert selection_of(judged, section).select == ("ALL",)  # RC3 names none of theirs
    assert selection_of(judged, "teardown").ignore == ()
    assert host_config(config, b).sections == config.sections  # nothing of its own


def test_a_hosts_codes_are_checked(tmp_path: Path) -> None:
    for given, problem in (
        ("{ignore: [RC3O1]}", r"hosts\.a\.ignore .*'RC3O1' is no rule code.*did you mean RC301"),
        ("{select: [RC101]}", r"hosts\.a\.select .*'RC101' is no rule code of a gate that runs"),
        ("{ignore: RC301}", r"hosts\.a\.ignore .*must be a list of strings"),
        ("{remote_root: 3}", r"hosts\.a\.remote_root .*must be a non-empty path"),
    ):
        (tmp_path / "rentcheck.yaml").write_text(f"hosts:\n  a: {given}\n")
        with pytest.raises(ConfigError, match=problem):
            inventory(load_config(str(tmp_path)))


def test_hosts_of_one_box_take_turns_in_the_pool(tmp_path: Path) -> None:
    """Two runs on one box share its pooled connection (a pull closes it when done): never at
    the same time; other boxes still run alongside; results in inventory order."""
    import threading

    from rentcheck.box.fleet_run import HostResult, run_fleet

    (tmp_path / "rentcheck.yaml").write_text(
        "hosts:\n  a1: {alias: box-a}\n  b: {alias: box-b}\n  a2: {alias: box-a}\n"
    )
    config = load_config(str(tmp_path))
    lock = threading.Lock()
    busy: dict[str, int] = {}
    most: dict[str, int] = {}
    both = threading.Barrier(2, timeout=5)  # box-a and box-b must be able to overlap

    def one(project: object, host: Host) -> HostResult:
        with lock:
            busy[host.alias] = busy.get(host.alias, 0) + 1
            most[host.alias] = max(most.get(host.alias, 0), busy[host.alias])
        if host.name in ("a1", "b"):
            both.wait()
        time.sleep(0.05)
        with lock:
            busy[host.alias] -= 1
        return HostResult(host, config)

    results = run_fleet(config, inventory(config), one, jobs=8)
    assert [r.host.name for r in results] == ["a1", "b", "a2"]
    assert most == {"box-a": 1, "box-b": 1}

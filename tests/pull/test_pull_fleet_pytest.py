"""The pull gate as one pytest item per inventory host (``--rentcheck-gate pull
--rentcheck-hosts all``) over real sshd on 127.0.0.1: each host's remote root into its own
folder, verified, judged with the host's own ``ignore``; under ``-n 2 --dist loadgroup`` a
host's pull runs on the worker of its audit, after it; the controller alone writes the ledger."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from pulllab import MiB, make_box

from tests.box.sshdkit import SshLab

FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
NAMES = ("gpu1", "jumped", "here", "down")


def _pyproject(run_a: Path, run_b: Path) -> str:
    return f"""
[tool.pytest.ini_options]

[tool.rentcheck.audit]
expect_gpu = false
# the "boxes" are this machine: other tests' live scripts are not what these tests judge
script_roots = ["/nonexistent/rentcheck-fleet-test"]

[tool.rentcheck.pull]
remote_root = "{run_a}"
local_root = "results"

[tool.rentcheck.hosts.gpu1]
alias = "box"

[tool.rentcheck.hosts.jumped]
alias = "viajump"
remote_root = "{run_b}"

[tool.rentcheck.hosts.here]
alias = "local"
remote_root = "{run_b}"
local_root = "mine/here"
ignore = ["RC510"]

[tool.rentcheck.hosts.down]
alias = "box-closed"
"""


def _workers(out: str) -> dict[str, tuple[str, int]]:
    """item name -> (xdist worker, line number) from ``-v`` lines ``[gw1] ... PASSED ::X``."""
    found = {}
    for number, line in enumerate(out.splitlines()):
        match = re.match(r"\[(gw\d+)\] .*(?:PASSED|FAILED) ::(rentcheck-\w+\[[\w-]+\])", line)
        if match:
            found[match.group(2)] = (match.group(1), number)
    return found


def test_one_pull_item_per_host_after_its_audit(
    pytester: pytest.Pytester, lab: SshLab, tmp_path: Path
) -> None:
    run_a = make_box(tmp_path / "run-a", {"ckpt/a.bin": MiB, "log.txt": 100})
    # run-b has an unfinished save: RC510 fails its pull, except on the host that ignores it.
    run_b = make_box(tmp_path / "run-b", {"ckpt/b.bin": 3000, "ckpt/c.pt.tmp": 10}, seed=1)
    pytester.makefile(".toml", pyproject=_pyproject(run_a, run_b))
    result = pytester.runpytest_subprocess(
        *FAST, "-n", "2", "--dist", "loadgroup", "-v", "--rentcheck-gate", "audit",
        "--rentcheck-gate", "pull", "--rentcheck-hosts", "all",
        f"--rentcheck-ssh-config={lab.ssh_config}",
    )  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(passed=5, failed=3)
    workers = _workers(out)
    expected = [f"rentcheck-{gate}[{name}]" for gate in ("audit", "pull") for name in NAMES]
    assert sorted(workers) == sorted(expected)
    for name in NAMES:  # one worker per host, its audit first
        audit, pull = workers[f"rentcheck-audit[{name}]"], workers[f"rentcheck-pull[{name}]"]
        assert audit[0] == pull[0] and audit[1] < pull[1], (name, out)
    result.stdout.fnmatch_lines(["*FAILED ::rentcheck-pull?jumped?*"])
    result.stdout.fnmatch_lines(["ckpt/c.pt.tmp: RC510 left over on the box*"])
    for gate in ("audit", "pull"):
        result.stdout.fnmatch_lines(
            [f"rentcheck-{gate}?down?: cannot reach box-closed (127.0.0.1:*): connection refused*"]
        )
    assert "Traceback" not in out
    summary = [line for line in out.splitlines() if line.startswith("rentcheck ")]
    assert summary == [
        "rentcheck audit gate: FAILED (1 failed, 3 passed)",
        "rentcheck pull gate: FAILED (2 failed, 2 passed)",
        "rentcheck verify gate: FAILED (2 failed, 2 passed)",  # the pull items verified
    ]
    # Each host's remote root in its own folder, verified (marker) where the pull passed.
    project = pytester.path
    got = {"gpu1": project / "results" / "gpu1", "here": project / "mine" / "here"}
    assert (got["gpu1"] / "ckpt" / "a.bin").read_bytes() == (run_a / "ckpt" / "a.bin").read_bytes()
    assert (got["here"] / "ckpt" / "b.bin").read_bytes() == (run_b / "ckpt" / "b.bin").read_bytes()
    for name, folder in got.items():
        marker = json.loads((folder / "PULL_VERIFIED.json").read_text())
        manifest = (folder / "PULL_MANIFEST.json").read_bytes()
        assert marker["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
        # The host's ignore is named in the marker's policy, never silently certified.
        assert marker["policy"]["advisory_codes"] == (["RC510"] if name == "here" else [])
    assert (project / "results" / "jumped" / "ckpt" / "b.bin").is_file()
    assert not (project / "results" / "jumped" / "PULL_VERIFIED.json").exists()
    assert not (project / "results" / "down").exists()
    ledger = [json.loads(line) for line in (project / ".rentcheck" / "ledger.jsonl").open()]
    recorded = sorted((e["gate"], e["host"], e["verdict"]) for e in ledger)
    verdicts = {"gpu1": "pass", "jumped": "fail", "here": "pass", "down": "fail"}
    assert recorded == sorted(
        [("audit", n, "fail" if n == "down" else "pass") for n in NAMES]
        + [(g, n, v) for g in ("pull", "verify") for n, v in verdicts.items()]
    )
    assert {e["via"] for e in ledger} == {"pytest"}


def test_a_host_without_a_remote_root_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makefile(".yaml", rentcheck="hosts:\n  h1: {alias: local, local_root: got}\n")
    result = pytester.runpytest_subprocess(
        *FAST, "--rentcheck-gate", "pull", "--rentcheck-hosts", "all"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*inventory host 'h1' has no remote root to pull*"])


def test_teardown_items_per_host_after_a_pytest_pull(
    pytester: pytest.Pytester, lab: SshLab, tmp_path: Path
) -> None:
    """Pull every host in one run; in the next, one teardown item per host finds the host's
    verified pull by the same inventory keys and the pull's verify in the ledger (the manifest
    matched), re-reads the box at its alias with its profile; a file added since fails only
    that host."""
    run_a = make_box(tmp_path / "run-a", {"ckpt/a.bin": 5000})
    run_b = make_box(tmp_path / "run-b", {"ckpt/b.bin": 3000}, seed=2)
    pytester.makefile(
        ".yaml",
        rentcheck=f"""
teardown: {{profile: runpod}}
pull: {{remote_root: "{run_a}", local_root: results}}
hosts:
  gpu1: {{alias: box, profile: vastai}}
  here: {{alias: local, remote_root: "{run_b}"}}
""",
    )
    pytester.makefile(".ini", pytest="[pytest]\n")
    ssh = f"--rentcheck-ssh-config={lab.ssh_config}"
    pulled = pytester.runpytest_subprocess(
        *FAST, "-n", "2", "--dist", "loadgroup", "--rentcheck-gate", "pull",
        "--rentcheck-hosts", "all", ssh,
    )  # fmt: skip
    pulled.assert_outcomes(passed=2)
    args = (*FAST, "--rentcheck-gate", "teardown", "--rentcheck-hosts", "all", ssh, "-v")
    approved = pytester.runpytest_subprocess(*args, "--rentcheck-approve")
    approved.assert_outcomes(passed=2)
    (run_a / "ckpt" / "later.bin").write_bytes(b"a checkpoint written after the pull")
    later = pytester.runpytest_subprocess(*args, "--rentcheck-approve")
    later.assert_outcomes(passed=1, failed=1)
    later.stdout.fnmatch_lines(["*FAILED ::rentcheck-teardown?gpu1?*"])
    later.stdout.fnmatch_lines(["ckpt/later.bin: RC802 added on the box since the pull*"])
    unapproved = pytester.runpytest_subprocess(*args)
    unapproved.assert_outcomes(failed=2)
    unapproved.stdout.fnmatch_lines(  # each host's own platform, from its own profile
        ["meter stop on vastai: destroy*", "meter stop on runpod: terminate*",
         "here: RC804 the pull is verified * needs --approve*"]
    )  # fmt: skip
    ledger = [json.loads(line) for line in (pytester.path / ".rentcheck" / "ledger.jsonl").open()]
    downs = [(e["host"], e["verdict"]) for e in ledger if e["gate"] == "teardown"]
    assert sorted(downs[:2]) == [("gpu1", "pass"), ("here", "pass")]
    assert sorted(downs[2:4]) == [("gpu1", "fail"), ("here", "pass")]
    assert [e["evidence"].get("manifest") for e in ledger if e["gate"] == "verify"] == [
        e["evidence"]["manifest"] for e in ledger if e["gate"] == "teardown"
    ][:2]

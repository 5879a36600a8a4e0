"""The pull and teardown gates in pytest: ``--rentcheck-pull`` and ``--rentcheck-teardown``
items from the gate table, judged like the CLI, recorded in the ledger by the controller."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pulllab import make_box

FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", pytest="[pytest]\n")
    pytester.makefile(".yaml", rentcheck="teardown:\n  profile: runpod\n")
    make_box(pytester.path / "box", {"ckpt/a.bin": 70_000, "log.txt": 12})
    return pytester


def _ledger(path: Path) -> list[tuple[str, str, str | None]]:
    lines = (path / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    return [(e["gate"], e["verdict"], e["via"]) for e in map(json.loads, lines)]


def test_pull_item_brings_verifies_and_marks(project: pytest.Pytester) -> None:
    box = project.path / "box"
    result = project.runpytest_subprocess(*FAST, f"--rentcheck-pull=local:{box}=results", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*rentcheck-pull?local:{box}=results? PASSED*"])
    assert (project.path / "results" / "ckpt" / "a.bin").read_bytes() == (
        box / "ckpt" / "a.bin"
    ).read_bytes()
    marker = json.loads((project.path / "results" / "PULL_VERIFIED.json").read_text())
    assert marker["source"]["remote_root"] == str(box)
    assert _ledger(project.path) == [("pull", "pass", "pytest")]


def test_teardown_item_fails_unapproved_and_on_a_new_box_file(project: pytest.Pytester) -> None:
    box = project.path / "box"
    pulled = project.run(sys.executable, "-m", "rentcheck", "pull", f"local:{box}", "results")
    assert pulled.ret == 0, pulled.stdout.str()
    args = (*FAST, "--rentcheck-teardown", "results", "--rentcheck-host", "local")
    unapproved = project.runpytest_subprocess(*args)
    unapproved.assert_outcomes(failed=1)
    unapproved.stdout.fnmatch_lines(["*RC804 the pull is verified*needs --approve*"])
    approved = project.runpytest_subprocess(*args, "--rentcheck-approve", "-v")
    approved.assert_outcomes(passed=1)
    (box / "ckpt" / "b.bin").write_bytes(b"a later checkpoint")
    later = project.runpytest_subprocess(*args, "--rentcheck-approve")
    later.assert_outcomes(failed=1)
    later.stdout.fnmatch_lines(["*ckpt/b.bin: RC802 added on the box since the pull*"])
    gates = [(g, v) for g, v, via in _ledger(project.path) if via == "pytest"]
    assert gates == [("teardown", "fail"), ("teardown", "pass"), ("teardown", "fail")]


def test_bad_pull_option_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST, "--rentcheck-pull", "nohost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*use HOST:REMOTE_ROOT=LOCAL_ROOT*"])

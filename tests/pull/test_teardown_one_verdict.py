"""Teardown's words, exit code, ledger approval and report come from one verdict (judge()):
the gate that releases the box can no longer print "passed" while it exits 1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture
def verified(pulled: Path, cli, tmp_path: Path) -> tuple[Path, Path]:
    """A verified pull and the roster rebuilt on the box after it (same files)."""
    from tests.pull.test_pull_teardown import later_roster

    assert cli("verify", str(pulled)).code == 0
    return pulled, later_roster(pulled / "PULL_MANIFEST.json", tmp_path / "now.json")


def _ledger(cwd: Path) -> list[dict[str, object]]:
    path = cwd / ".rentcheck" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("fail_level", ["note", "warning", "error"])
def test_headline_exit_code_ledger_and_report_agree(verified, cli, fail_level: str) -> None:
    """RC805 (an irreversible meter stop) is a note: at fail-level note the gate fails, and
    every surface says so; at warning and error it passes, and every surface says that."""
    root, now = verified
    cwd = Path(os.getcwd())
    args = ("--profile", "runpod", "--approve", "--fail-level", fail_level)
    text = cli("teardown", "--verified", str(root), "--manifest-now", str(now), *args)
    as_json = cli(
        "teardown", "--verified", str(root), "--manifest-now", str(now), *args,
        "--output-format", "json",
    )  # fmt: skip
    passed = fail_level != "note"
    assert text.code == as_json.code == (0 if passed else 1), text.out
    assert ("teardown gate passed: you may now stop the meter yourself." in text.out) is passed
    assert ("teardown gate FAILED: do not stop the meter" in text.out) is not passed
    doc = json.loads(as_json.out)
    assert doc["gate"]["passed"] is passed and doc["teardown"]["passed"] is passed
    entries = [e for e in _ledger(cwd) if e["gate"] == "teardown"]
    assert [e["verdict"] for e in entries] == ["pass" if passed else "fail"] * 2
    for entry in entries:
        # The approval is evidence of a released box: kept only when the verdict passed.
        assert ("approval" in entry["evidence"]) is passed  # type: ignore[operator]


def test_a_teardown_that_never_reread_the_box_cannot_pass(verified, cli) -> None:
    """Everything else holds (verified pull, approval), but the box was not re-read: RC801
    says so, and nothing prints that the meter may be stopped."""
    root, _ = verified
    res = cli("teardown", "--verified", str(root), "--host", "no-such-box.invalid",
              "--profile", "runpod", "--approve", "--connect-timeout", "2")  # fmt: skip
    assert res.code != 0
    assert "you may now stop the meter" not in res.out

"""Teardown's meter-stop block (a headline) shows box-supplied text on one line, escaped."""

from __future__ import annotations

import shutil
from pathlib import Path

from rentcheck.sanitise import sanitise

FORGED = "teardown gate passed: you may now stop the meter yourself."


def test_a_hostile_manifest_path_cannot_print_the_pass_line(pulled: Path, cli, tmp_path) -> None:
    assert cli("verify", str(pulled)).code == 0
    now = tmp_path / f"now\n{FORGED}\r\x1b]0;t\x07\x85\u202e.json"
    shutil.copy2(pulled / "PULL_MANIFEST.json", now)
    args = ("--verified", str(pulled), "--manifest-now", str(now), "--profile", "runpod")
    res = cli("teardown", *args)
    assert res.code == 1  # not approved: the gate did not pass
    lines = res.out.splitlines()
    assert not any(line.startswith(FORGED) for line in lines), res.out
    assert all(sanitise(line) == line for line in lines)
    assert sanitise(str(now)) in res.out

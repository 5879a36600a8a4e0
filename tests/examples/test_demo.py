"""`./dev demo` (examples/demo.py): the whole lifecycle on a copy of tinytrain, for real.

One run of the real demo (smoke, resume, a detached launch: about a minute), then its output
and the one folder it leaves are read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.py"
STEPS = (
    "lint: the catch", "lint: the fix", "lint", "smoke", "resume", "audit", "launch",
    "watch: running", "watch: finished", "pull", "teardown: refused", "pull: again", "teardown",
    "status", "report",
)  # fmt: skip
LINE = re.compile(r"^\[\s*(\d+)/(\d+)\] (CAUGHT|PASS|FAILED)\s+(.+?)\s+\d+\.\d s  \$ rentcheck ")


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENTCHECK_")}
    return subprocess.run(
        [sys.executable, str(DEMO), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_demo_walks_the_lifecycle_and_catches_the_planted_mistake(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    before = (REPO / "examples" / "tinytrain" / "run.sh").read_bytes()
    proc = _demo("--dir", str(folder))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = proc.stdout
    steps = [LINE.match(line) for line in out.splitlines()]
    found = [(m.group(3), m.group(4)) for m in steps if m]
    assert [name for _, name in found] == list(STEPS)
    caught = {name for verdict, name in found if verdict == "CAUGHT"}
    assert caught == {"lint: the catch", "teardown: refused"}
    assert {v for v, name in found if name not in caught} == {"PASS"}
    # The catch is shown and explained, then fixed.
    assert "planted: run.sh saved with Windows (CRLF) line endings" in out
    assert re.search(r"run\.sh:1:\d+: RC101 .*CRLF line endings", out)
    assert "Fixed 1." in out
    # Every inner word the output uses is explained first.
    for word in ("shim", "ledger", "gate"):
        assert f"    {word}: " in out.split("[ 1/")[0]
    # The audit's facts table, torch as the project's interpreter (this venv) sees it.
    assert "local: measured" in out
    torch_line = next(line for line in out.splitlines() if line.strip().startswith("torch "))
    assert f"with {Path(sys.executable).parent}/python" in torch_line
    assert "finished with status 0" in out
    # Pulled and verified; teardown refused, naming the checkpoint written after the pull; the
    # second pull sends only that file; then teardown passes.
    assert (folder / "pulled" / "PULL_VERIFIED.json").is_file()
    assert re.search(r"step_999\.pt: RC802 added on the box since the pull", out)
    assert "teardown gate passed" in out
    ledger = (folder / "tinytrain" / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    teardowns = [e["verdict"] for e in map(json.loads, ledger) if e["gate"] == "teardown"]
    assert teardowns == ["fail", "pass"]
    # One folder, named on the first line, holds everything.
    assert out.splitlines()[0] == f"demo: everything goes in DEMO={folder}"
    assert len(list((folder / "logs").iterdir())) == len(STEPS)
    assert (folder / "report.html").is_file() and (folder / "report.md").is_file()
    assert "step=60" in (folder / "job" / "train.log").read_text()
    assert (folder / "tinytrain" / ".rentcheck" / "ledger.jsonl").is_file()
    assert (folder / "home" / ".rentcheck" / "jobs").is_dir()  # the job's files: not in ~
    # The example itself is untouched (the mistake was planted in the copy).
    assert (REPO / "examples" / "tinytrain" / "run.sh").read_bytes() == before


def test_the_demo_never_replaces_a_folder_it_did_not_make(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    proc = _demo("--dir", str(mine))
    assert proc.returncode != 0
    assert "was not made by the demo; nothing was changed" in proc.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]

"""The ledger: atomic durable appends, torn lines skipped and never rewritten (real processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rentcheck.ledger import LEDGER_SCHEMA, append_entry, ledger_path, read_ledger

WRITER = """
import sys
from rentcheck.ledger import append_entry
root, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
pad = "x" * 300  # entries of a realistic size
for i in range(count):
    append_entry(root, {"schema": "rentcheck/ledger/v1", "gate": "lint", "verdict": "pass",
                        "writer": tag, "n": i, "pad": pad})
"""


def _entry(**extra: object) -> dict[str, object]:
    return {"schema": LEDGER_SCHEMA, "gate": "smoke", "verdict": "pass", **extra}


def test_eight_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"w{k}", "250"])
        for k in range(8)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    read = read_ledger(str(tmp_path))
    assert read.problems == []
    assert len(read.entries) == 8 * 250
    for k in range(8):  # every writer's lines are all there, in its own order
        mine = [e["n"] for e in read.entries if e["writer"] == f"w{k}"]
        assert mine == list(range(250))


def test_a_writer_killed_mid_append_leaves_every_complete_line(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "w", "1000000"])
    path = Path(ledger_path(str(tmp_path)))
    deadline = time.monotonic() + 60
    while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    raw = path.read_bytes()
    complete = raw.count(b"\n")
    read = read_ledger(str(tmp_path))
    assert complete > 100
    assert len(read.entries) == complete  # every line that ended is an entry
    assert [e["n"] for e in read.entries] == list(range(complete))
    assert len(read.problems) == (0 if raw.endswith(b"\n") else 1)
    # A new append after the kill is whole and readable; nothing before it was rewritten.
    append_entry(str(tmp_path), _entry(after="kill"))
    assert path.read_bytes().startswith(raw)
    assert read_ledger(str(tmp_path)).entries[-1]["after"] == "kill"


def test_a_torn_trailing_line_is_reported_and_skipped_never_rewritten(tmp_path: Path) -> None:
    append_entry(str(tmp_path), _entry(n=1))
    path = Path(ledger_path(str(tmp_path)))
    torn = json.dumps(_entry(n=2))[:25].encode()  # a writer cut off mid-line
    with path.open("ab") as handle:
        handle.write(torn)
    before = path.read_bytes()
    read = read_ledger(str(tmp_path))
    assert [e["n"] for e in read.entries] == [1]
    assert len(read.problems) == 1 and ":2: skipped a torn" in read.problems[0]
    assert path.read_bytes() == before  # reading never rewrites
    append_entry(str(tmp_path), _entry(n=3))
    assert path.read_bytes().startswith(before)
    read = read_ledger(str(tmp_path))
    assert [e["n"] for e in read.entries] == [1, 3]  # the torn line stays one bad line
    assert len(read.problems) == 1


def test_corrupt_and_foreign_lines_are_named_by_line_number(tmp_path: Path) -> None:
    path = Path(ledger_path(str(tmp_path)))
    path.parent.mkdir(parents=True)
    good = json.dumps(_entry(n=1))
    path.write_text(f'{good}\nnot json\n{{"schema": "other"}}\n\xff\n{good}\n')
    read = read_ledger(str(tmp_path))
    assert len(read.entries) == 2
    assert [p.split(":")[-2] for p in read.problems] == ["2", "3", "4"]


def test_an_absent_ledger_is_empty(tmp_path: Path) -> None:
    read = read_ledger(str(tmp_path))
    assert read.entries == [] and read.problems == []

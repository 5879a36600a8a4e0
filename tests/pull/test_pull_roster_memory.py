"""The roster streams on both ends (issue 28, item 4): the box writes the manifest as it walks
and hashes, this end parses it as it arrives, into columns. Held by peak RSS, never by time:
``rentcheck manifest build --host box`` of N and of 5N files over a real sshd on loopback,
each in a fresh process whose own peak (VmHWM) it prints, and the box's roster program's own
peak (getrusage, reported in its answer). What each further file costs is the growth
between the two, divided by the 4N files between them.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pytest

from rentcheck.box.transport import LocalBox
from rentcheck.errors import RemoteError
from rentcheck.pull.remote_roster import _Answer
from tests.box.sshdkit import SshLab, linked_tree

SRC = Path(__file__).resolve().parents[2] / "src"


def build_on_box(lab: SshLab, root: Path) -> tuple[float, float, dict[str, object]]:
    """Peak RSS here and on the box (MiB) of one ``manifest build --host``, and its JSON."""
    code = textwrap.dedent(f"""
        import io, sys
        sys.path.insert(0, {str(SRC)!r})
        from contextlib import redirect_stdout
        from rentcheck.cli import main
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(["manifest", "build", "--host", "box", {str(root)!r},
                         "--ssh-config", {str(lab.ssh_config)!r}, "--output-format", "json"])
        status = open("/proc/self/status").read()
        hwm = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        print(code, hwm)
        print(out.getvalue())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    first, _, rest = proc.stdout.partition("\n")
    exit_code, hwm = first.split()
    assert exit_code == "0", proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(rest)
    manifest = doc["manifest"]
    return int(hwm) / 1024, manifest["box_peak_rss_kib"] / 1024, manifest


def test_a_streamed_roster_costs_columns_here_and_nothing_per_file_on_the_box(
    lab: SshLab, tmp_path: Path
) -> None:
    n = 30_000
    peaks: dict[int, tuple[float, float]] = {}
    for count in (n, 5 * n):
        root = tmp_path / f"run{count}"
        linked_tree(root, count)
        here, box, manifest = build_on_box(lab, root)
        assert manifest["totals"] == {"files": count, "bytes": 0}
        assert (root / "PULL_MANIFEST.json").stat().st_size > 150 * count
        peaks[count] = (here, box)
    here_per_file = (peaks[5 * n][0] - peaks[n][0]) * (1 << 20) / (4 * n)
    box_per_file = (peaks[5 * n][1] - peaks[n][1]) * (1 << 20) / (4 * n)
    at_a_million = peaks[5 * n][0] + here_per_file * (1_000_000 - 5 * n) / (1 << 20)
    print(
        f"peak RSS (here, box) MiB {peaks}; per further file: here {here_per_file:.0f} B, "
        f"box {box_per_file:.0f} B; here at 1M files ~{at_a_million:.0f} MiB"
    )
    # Before: the box held the roster whole (~300 B a file) and this end its bytes, a
    # decompressed copy and a parse (~950 B a file). The box holds at most the compressed
    # answer's first 4 MiB; this end a path string, a digest and two numbers a file.
    assert box_per_file < 40, box_per_file
    assert here_per_file < 200, here_per_file
    assert at_a_million < 250, at_a_million


def test_an_answer_that_inflates_past_its_limit_or_is_cut_short_is_refused() -> None:
    box = LocalBox()
    bomb = zlib.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in ~64 KB
    with pytest.raises(RemoteError, match="over 1048576 bytes"):
        _Answer(box, {}, bomb, timeout=5, what="t", limit=1 << 20).read()
    cut = zlib.compress(b"x" * 100_000)[:-10]
    with pytest.raises(RemoteError, match="cut short"):
        _Answer(box, {}, cut, timeout=5, what="t", limit=1 << 20).read()
    extra = zlib.compress(b"roster") + b"more"
    with pytest.raises(RemoteError, match="data after the answer"):
        _Answer(box, {}, extra, timeout=5, what="t", limit=1 << 20).read()
    whole = b"".join(bytes([i % 251]) * 1000 for i in range(5000))
    answer = _Answer(box, {}, zlib.compress(whole), timeout=5, what="t", limit=1 << 30)
    assert answer.read() == whole


def test_a_pull_over_ssh_logs_in_twice_roster_and_rsync(
    lab: SshLab, cli: Any, tmp_path: Path
) -> None:
    """The roster and the re-read after the transfer share one connection (kept open while
    rsync brings its own): one login fewer than before, the most a small-file pull paid
    for besides the files. Counted from the box's sshd log."""
    if shutil.which("rsync") is None:
        pytest.skip("rsync missing")
    run = tmp_path / "run"
    run.mkdir()
    for n in range(30):
        (run / f"part-{n:03d}.dat").write_bytes(b"\x00" + os.urandom(100))
    before = lab.box.log_text().count("Accepted publickey")
    res = cli("pull", f"box:{run}", "results", "--ssh-config", str(lab.ssh_config), cwd=tmp_path)
    assert res.code == 0, res.out + res.err
    assert lab.box.log_text().count("Accepted publickey") - before == 2


def teardown_peak(lab: SshLab, root: Path) -> tuple[float, dict[str, Any]]:
    """Peak RSS here (MiB) of one ``teardown --host`` re-reading ``root`` on the box, and its
    JSON (the pulled root and the box's root are the same directory on loopback)."""
    code = textwrap.dedent(f"""
        import io, sys
        sys.path.insert(0, {str(SRC)!r})
        from contextlib import redirect_stdout
        from rentcheck.cli import main
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(["teardown", "--verified", {str(root)!r}, "--host", "box",
                         "--remote-root", {str(root)!r}, "--ssh-config",
                         {str(lab.ssh_config)!r}, "--profile", "runpod", "--approve",
                         "--output-format", "json"])
        status = open("/proc/self/status").read()
        hwm = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        print(code, hwm)
        print(out.getvalue())
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root.parent
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    first, _, rest = proc.stdout.partition("\n")
    exit_code, hwm = first.split()
    assert exit_code in ("0", "1"), proc.stdout[-2000:] + proc.stderr[-2000:]
    return int(hwm) / 1024, json.loads(rest)


def test_teardowns_reread_of_the_box_costs_columns_per_file_like_pulls(
    lab: SshLab, tmp_path: Path, cli: Any
) -> None:
    n = 20_000
    peaks: dict[int, float] = {}
    for count in (n, 5 * n):
        root = tmp_path / f"run{count}"
        linked_tree(root, count)
        assert cli("manifest", "build", str(root), cwd=tmp_path).code == 0
        # Built an hour later (as after a run): no file's ctime is near the build, so the
        # re-read trusts size and mtime and hashes nothing; the stat answer is what is held.
        roster = root / "PULL_MANIFEST.json"
        doc = json.loads(roster.read_text())
        built = datetime.datetime.fromisoformat(doc["created_at"])
        doc["created_at"] = (built + datetime.timedelta(hours=1)).isoformat()
        roster.write_text(json.dumps(doc))
        assert cli("verify", str(root), cwd=tmp_path).code == 0
        peaks[count], doc = teardown_peak(lab, root)
        td = doc["teardown"]
        assert td["box_reread"] and td["files_on_box_now"] == count, td
        assert not td["added_on_box"] and not td["changed_on_box"], td
        assert td["hashed_on_box"] == 0, td
    per_file = (peaks[5 * n] - peaks[n]) * (1 << 20) / (4 * n)
    print(f"teardown peak RSS MiB {peaks}; per further file {per_file:.0f} B")
    # What it holds a file: the marker's and the pulled roster's columns and the stat
    # answer's numbers (its path string the marker's): ~330 B here. With a dict entry, a
    # tuple and a second path string a file besides, it was ~570 B.
    assert per_file < 450, per_file

"""Nothing is unchanged unless proved (issue 28, item 2), on a real sshd on loopback.

On the box: a file rewritten at the same size with its mtime restored (``cp -p``,
``touch -r``, ``shutil.copy2``) moved its ctime, so it is hashed and refused without
``--rehash``. Here: a ``cp -r`` copy (same bytes, new mtimes) passes, because metadata drift
is settled by hashing the local file; the same mtime over other bytes is RC521. A file that
vanished or could not be read when it was to be hashed is changed, never unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rentcheck.box.transport import LocalBox
from rentcheck.pull.remote_roster import hash_files
from rentcheck.pull.teardown import (
    UNREADABLE,
    VANISHED,
    WRITING,
    BoxNow,
    check_teardown,
    meter_stop_plan,
)
from tests.box.sshdkit import SshLab


@pytest.fixture
def pulled(cli: Any, lab: SshLab, tmp_path: Path) -> tuple[Path, Path, Any]:
    """A run directory on the box, pulled and verified into ``project/results``."""
    run = tmp_path / "box" / "run"
    (run / "ckpt").mkdir(parents=True)
    for n in range(3):
        (run / "ckpt" / f"last-{n}.bin").write_bytes(bytes([n]) * 4096)
    (run / "notes.txt").write_text("lr=0.1\n")
    project = tmp_path / "project"
    project.mkdir()
    ssh = ("--ssh-config", str(lab.ssh_config))
    res = cli("pull", f"box:{run}", "results", *ssh, cwd=project)
    assert res.code == 0, res.out + res.err

    def teardown(verified: str = "results", *extra: str) -> tuple[int, dict[str, Any]]:
        res = cli(
            "teardown", "--host", "box", *ssh, "--verified", verified, "--profile", "runpod",
            "--approve", "--output-format", "json", *extra, cwd=project,
        )  # fmt: skip
        assert res.code in (0, 1), res.out + res.err
        return res.code, json.loads(res.out)

    return run, project, teardown


def errors(doc: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for r in doc["results"]:
        if r["severity"] == "error":
            found.setdefault(r["code"], set()).add(r["path"])
    return found


def _same_size_other_bytes_same_mtime(path: Path) -> None:
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_box_file_rewritten_at_the_same_size_and_mtime_is_refused_without_rehash(
    pulled: tuple[Path, Path, Any],
) -> None:
    run, _, teardown = pulled
    assert teardown()[0] == 0
    _same_size_other_bytes_same_mtime(run / "ckpt" / "last-1.bin")
    code, doc = teardown()
    assert code == 1 and errors(doc) == {"RC802": {"ckpt/last-1.bin"}}
    assert doc["teardown"]["changed_on_box"] == ["ckpt/last-1.bin"]


def test_copy2_over_a_box_file_keeps_its_mtime_and_is_still_refused(
    pulled: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    run, _, teardown = pulled
    other = tmp_path / "other.bin"
    other.write_bytes(b"\x07" * 4096)
    os.utime(other, ns=(0, (run / "ckpt" / "last-2.bin").stat().st_mtime_ns))
    shutil.copy2(other, run / "ckpt" / "last-2.bin")  # what rsync -a / tar x / cp -p do
    code, doc = teardown()
    assert code == 1 and errors(doc) == {"RC802": {"ckpt/last-2.bin"}}


def test_a_cp_r_copy_with_new_mtimes_passes_and_other_bytes_under_old_mtimes_fail(
    pulled: tuple[Path, Path, Any],
) -> None:
    _, project, teardown = pulled
    shutil.copytree(project / "results", project / "copy", copy_function=shutil.copy)
    mine = project / "copy" / "ckpt" / "last-0.bin"
    theirs = project / "results" / "ckpt" / "last-0.bin"
    assert mine.stat().st_mtime_ns != theirs.stat().st_mtime_ns
    code, doc = teardown("copy")
    assert code == 0, doc["results"]
    # Local bit rot that kept size and mtime: the ctime moved, so the file is hashed.
    _same_size_other_bytes_same_mtime(project / "results" / "notes.txt")
    code, doc = teardown()
    assert code == 1 and errors(doc) == {"RC521": {str(Path("results") / "notes.txt")}}


def test_a_local_file_that_cannot_be_read_is_not_unchanged(
    pulled: tuple[Path, Path, Any],
) -> None:
    _, project, teardown = pulled
    victim = project / "results" / "ckpt" / "last-0.bin"
    stamp = victim.stat()
    victim.unlink()
    victim.mkdir()  # same path, no longer a file that can be hashed
    code, doc = teardown()
    assert code == 1 and errors(doc) == {"RC521": {str(Path("results") / "ckpt" / "last-0.bin")}}
    assert stamp.st_size == 4096


def test_vanished_and_unreadable_when_hashed_are_changed(tmp_path: Path) -> None:
    # The box's hash step names a path that is gone by then as missing, never as hashed.
    root = tmp_path / "root"
    root.mkdir()
    (root / "here.bin").write_bytes(b"x")
    hashed = hash_files(LocalBox(), str(root), ["here.bin", "gone.bin"])
    assert set(hashed.entries) == {"here.bin"} and hashed.missing == {"gone.bin"}
    # ... and teardown counts each such state as a change, not as unchanged.
    verified = tmp_path / "verified"
    verified.mkdir()
    rows = [{"path": p, "size": 1, "mtime_ns": 1, "sha256": "ab" * 32} for p in ("a", "b", "c")]
    (verified / "PULL_VERIFIED.json").write_text(
        json.dumps({"schema": "rentcheck/pull-verified/v1", "run_id": "r", "manifest_sha256":
                    "cd" * 32, "verified_at": "2026-01-01T00:00:00+00:00", "files": rows})
    )  # fmt: skip
    now = BoxNow("box:/run", {"a": (1, 1, VANISHED), "b": (1, 1, UNREADABLE), "c": (1, 1, WRITING)})
    result = check_teardown(verified, now, meter_stop_plan(None, "stop"), approved=True)
    assert sorted(result.changed) == ["a", "b", "c"] and not result.passed
    changes = {f.path: (f.details or {}).get("change") for f in result.findings}
    assert changes["a"] == "vanished" and changes["b"] == "unreadable" and changes["c"] == "writing"

"""The project digest: which files count, and what changes it (real git work trees)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rentcheck.config import load_config
from rentcheck.gates import evidence
from rentcheck.gates.evidence import changed_files, project_files


def _project(root: Path) -> evidence.ProjectFiles:
    if not (root / "rentcheck.yaml").exists():
        (root / "rentcheck.yaml").write_text("{}\n")  # the project root is its directory
    return project_files(load_config(str(root)))


def test_git_tree_counts_tracked_and_untracked_not_ignored(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("data/\n")
    (tmp_path / "train.py").write_text("print('a')\n")
    (tmp_path / "new_module.py").write_text("X = 1\n")  # untracked, not ignored: counts
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "shard.bin").write_bytes(b"\0" * 100)  # ignored: does not
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text("")  # excluded by default
    subprocess.run(["git", "-C", str(tmp_path), "add", "train.py", ".gitignore"], check=True)
    first = _project(tmp_path)
    assert set(first.files) == {".gitignore", "train.py", "new_module.py", "rentcheck.yaml"}
    (tmp_path / ".rentcheck").mkdir()
    (tmp_path / ".rentcheck" / "ledger.jsonl").write_text("{}\n")  # our own files never count
    assert _project(tmp_path).digest == first.digest
    (tmp_path / "train.py").write_text("print('b')\n")
    (tmp_path / "new_module.py").unlink()
    second = _project(tmp_path)
    assert second.digest != first.digest
    assert changed_files(first.files, second.files) == ["new_module.py", "train.py"]


def test_outside_git_excluded_directories_are_not_entered(tmp_path: Path) -> None:
    (tmp_path / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pkg" / "index.js").write_text("")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    assert set(_project(tmp_path).files) == {"run.sh", "rentcheck.yaml"}


def test_a_big_file_counts_by_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "CONTENT_LIMIT", 10)
    big = tmp_path / "weights.bin"
    big.write_bytes(b"x" * 100)
    identity = _project(tmp_path).files["weights.bin"]
    assert identity.startswith("stat:100:")
    os.utime(big, ns=(1, 2))
    assert _project(tmp_path).files["weights.bin"] == "stat:100:2"

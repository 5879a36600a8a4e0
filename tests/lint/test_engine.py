"""The engine over trees: a process pool gives exactly the serial result, fixes included."""

from __future__ import annotations

from pathlib import Path

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set
from tests.conftest import make_repo


def _tree(root: Path) -> Path:
    files: dict[str, bytes | str] = {}
    for i in range(60):
        eol = b"\r\n" if i % 3 == 0 else b"\n"
        files[f"d{i % 4}/job{i}.sh"] = b"#!/bin/sh" + eol + b"echo " + str(i).encode() + eol
    return make_repo(root, files, executable=tuple(n for i, n in enumerate(files) if i % 5))


def _summary(result) -> list[tuple[str, int | None, str]]:
    return [(f.path or "", f.line, f.code) for f in result.findings]


def test_parallel_run_equals_serial_run(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    linter = Linter(Config(root=str(repo)), load_rule_set(with_plugins=False))
    serial = linter.run([str(repo)], jobs=1)
    parallel = linter.run([str(repo)], jobs=2)
    assert _summary(serial) == _summary(parallel)
    assert serial.checked == parallel.checked and len(serial.checked) == 60
    assert {code for _, _, code in _summary(serial)} == {"RC101", "RC102", "RC103"}


def test_parallel_fix_rewrites_every_file_once(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    linter = Linter(Config(root=str(repo), select=("RC101",)), load_rule_set(with_plugins=False))
    fixed = linter.run([str(repo)], fix=True, jobs=2)
    assert len(fixed.fixed) == 20 and fixed.findings == []
    assert not any(b"\r\n" in p.read_bytes() for p in repo.rglob("*.sh"))

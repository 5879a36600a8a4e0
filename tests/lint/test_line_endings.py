"""RC101 crlf-line-endings through the CLI, on real git repositories."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import make_repo

CRLF_SCRIPT = b"#!/usr/bin/env bash\r\nset -e\r\necho synced\r\n"


def test_crlf_script_fails_then_fix_converts_and_keeps_exec_bit(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"run.sh": CRLF_SCRIPT, ".gitattributes": "*.sh text eol=lf\n"},
        executable=("run.sh",),
    )
    first = cli("check", "--output-format", "json", cwd=repo)
    assert first.code == 1
    doc = json.loads(first.out)
    [finding] = doc["results"]
    assert (finding["code"], finding["path"], finding["line"]) == ("RC101", "run.sh", 1)
    assert finding["details"]["crlf_lines"] == 3

    fixed = cli("check", "--fix", cwd=repo)
    assert fixed.code == 0, fixed.out
    assert "Fixed 1" in fixed.out
    script = repo / "run.sh"
    assert script.read_bytes() == CRLF_SCRIPT.replace(b"\r\n", b"\n")
    assert os.stat(script).st_mode & 0o777 == 0o755
    assert not [p for p in os.listdir(repo) if "rentcheck-tmp" in p]

    again = cli("check", cwd=repo)
    assert again.code == 0
    assert "All checks passed" in again.out


def test_diff_shows_the_fix_and_writes_nothing(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.sh": b"echo a\r\n", ".gitattributes": "*.sh eol=lf\n"})
    result = cli("check", "--diff", cwd=repo)
    assert result.code == 1
    assert "-echo a\\r" in result.out and "+echo a" in result.out
    assert (repo / "a.sh").read_bytes() == b"echo a\r\n"


def test_python_and_windows_files_with_crlf_are_not_flagged(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {
            "train.py": b"import os\r\n",
            "setup.bat": b"@echo off\r\n",
            "go.ps1": b"Write-Host hi\r\n",
            "run.sh": b"#!/bin/bash\necho hi\n",  # something RC101 reads: a pass is proof
        },
    )
    result = cli("check", "--select", "RC101", cwd=repo)
    assert result.code == 0, result.out


def test_shebang_decides_for_files_without_extension(cli, tmp_path: Path) -> None:
    files = {
        f"launch_{sh}": f"#!/bin/{sh}\r\necho hi\r\n".encode()
        for sh in ("sh", "bash", "dash", "zsh")
    }
    files["notes"] = b"plain text\r\n"
    repo = make_repo(tmp_path / "repo", files, executable=tuple(n for n in files if n != "notes"))
    result = cli("check", "--select", "RC101", "--output-format", "json", cwd=repo)
    paths = sorted(r["path"] for r in json.loads(result.out)["results"])
    assert paths == ["launch_bash", "launch_dash", "launch_sh", "launch_zsh"]


def test_clean_repository_exits_zero(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"run.sh": "#!/usr/bin/env bash\necho ok\n", ".gitattributes": "*.sh text eol=lf\n"},
        executable=("run.sh",),
    )
    result = cli("check", cwd=repo)
    assert (result.code, result.err) == (0, "")

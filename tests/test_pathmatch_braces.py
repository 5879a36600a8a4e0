"""Brace globs and ``./`` patterns match (issue 30: both silently never matched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rentcheck.pathmatch import matches_any
from tests.conftest import make_repo


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("run.sh", "*.{sh,bash}", True),
        ("deep/x.bash", "*.{sh,bash}", True),
        ("x.py", "*.{sh,bash}", False),
        ("src/a/b.pyi", "src/**/*.{py,pyi}", True),
        ("x.zsh", "*.{sh,{ba,z}sh}", True),
        ("{a}", "{a}", True),  # no comma: literal braces, as in bash
        ("run.sh", "./run.sh", True),
        ("sub/run.sh", "./run.sh", False),  # ./ anchors at the project root
        ("scripts/x.sh", "./scripts", True),
    ],
)
def test_brace_and_dot_slash_patterns(path: str, pattern: str, hit: bool) -> None:
    assert matches_any(path, [pattern]) is hit


def test_exclude_with_braces_excludes_from_check(cli, tmp_path: Path) -> None:
    crlf = b"#!/bin/bash\r\necho\r\n"
    repo = make_repo(
        tmp_path / "repo",
        {"a.sh": crlf, "b.bash": crlf, ".gitattributes": "* text eol=lf\n"},
    )
    assert cli("check", "--select", "RC101", cwd=repo).code == 1
    res = cli("check", "--select", "RC101", "--exclude", "*.{sh,bash}", cwd=repo)
    # Both scripts excluded: no RC101, and a lint of nothing is no pass (RC914).
    assert "RC101" not in res.out and "RC914" in res.out, res.out


def test_a_command_line_list_keeps_commas_inside_braces() -> None:
    from rentcheck.pathmatch import split_list

    assert split_list("*.{sh,bash},build,x/{a,{b,c}}") == ["*.{sh,bash}", "build", "x/{a,{b,c}}"]

"""CLI conventions from ruff's and the ecosystem's (issue 30): -q, FORCE_COLOR/NO_COLOR, shell
completion, did-you-mean for a typo'd option, and no silent fallback to another format."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rentcheck.cli import build_parser
from rentcheck.commands.completion import completion_script
from tests.conftest import make_repo

CRLF = {"run.sh": b"#!/bin/bash\r\necho\r\n", ".gitattributes": "*.sh text eol=lf\n"}


def test_quiet_prints_the_findings_and_nothing_else(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", CRLF)
    loud = cli("check", "--output-format", "concise", cwd=repo)
    quiet = cli("check", "-q", "--output-format", "concise", cwd=repo)
    assert loud.code == quiet.code == 1
    assert quiet.out.splitlines() == loud.out.splitlines()[:-1]  # the summary line only gone
    assert quiet.out.startswith("run.sh:1:") and "Found" not in quiet.out
    (repo / "run.sh").write_bytes(b"#!/bin/bash\necho\n")
    assert cli("check", "--quiet", cwd=repo).out == ""


@pytest.mark.parametrize(
    "case",
    [
        ({"FORCE_COLOR": "1"}, [], True),
        ({"FORCE_COLOR": ""}, [], False),  # empty: unset, as force-color.org says
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, [], False),
        ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
        ({"NO_COLOR": "1"}, ["--color", "always"], True),
        ({}, [], False),  # not a terminal
    ],
)
def test_force_color_and_no_color(cli, tmp_path: Path, monkeypatch, case) -> None:
    env, flag, ansi = case
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    repo = make_repo(tmp_path / "repo", CRLF)
    res = cli("check", "--output-format", "concise", *flag, cwd=repo)
    assert ("\x1b[" in res.out) is ansi


def test_a_typod_option_is_refused_by_its_command_with_a_suggestion(cli, tmp_path: Path) -> None:
    res = cli("check", "--fail-levl", "error", cwd=tmp_path)
    assert res.code == 2 and res.out == ""
    assert "rentcheck check: error: unrecognized arguments: --fail-levl" in res.err
    assert "did you mean --fail-level?" in res.err
    nested = cli("manifest", "build", ".", "--run-di", "x", cwd=tmp_path)
    assert nested.code == 2 and "rentcheck manifest build: error" in nested.err
    assert "did you mean --run-id?" in nested.err


def test_report_refuses_a_format_it_cannot_write(cli, tmp_path: Path) -> None:
    res = cli("report", "--output-format", "sarif", cwd=tmp_path)
    assert res.code == 2 and res.out == ""  # not markdown under a sarif name
    assert "report writes HTML and markdown, not sarif" in res.err
    assert "rentcheck check --output-format sarif" in res.err


def _bash_complete(script: str, words: list[str]) -> list[str]:
    line = " ".join(words)
    program = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _rentcheck; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    proc = subprocess.run(
        ["bash", "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    return proc.stdout.split()


def test_bash_completion_completes_commands_subcommands_and_options(cli) -> None:
    res = cli("completion", "bash")
    assert res.code == 0
    assert _bash_complete(res.out, ["rentcheck", "che"]) == ["check"]
    assert "--fail-level" in _bash_complete(res.out, ["rentcheck", "check", "--fail"])
    assert _bash_complete(res.out, ["rentcheck", "manifest", "bu"]) == ["build"]
    assert "--run-id" in _bash_complete(res.out, ["rentcheck", "manifest", "build", "--ru"])


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse(shell: str) -> None:
    script = completion_script(shell, build_parser())
    assert "check" in script and "--fail-level" in script.replace("-l fail-level", "--fail-level")
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} is not installed (apt-get install -y {shell})")
    proc = subprocess.run([binary, "-n"], input=script, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_completion_is_listed_in_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rentcheck", "--help"], capture_output=True, text=True, check=True
    )
    assert "completion" in proc.stdout


def test_a_typod_command_gets_the_nearest_command(cli, tmp_path: Path) -> None:
    res = cli("chek", cwd=tmp_path)
    assert res.code == 2 and "unknown command 'chek' (did you mean check?)" in res.err
    far = cli("xyzzy", cwd=tmp_path)
    assert far.code == 2 and "invalid choice: 'xyzzy'" in far.err  # argparse's full list

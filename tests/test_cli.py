"""The command line: exit codes, one-line errors, output formats and files, rule docs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rentcheck import __version__
from tests.conftest import make_repo, run_subprocess

BAD_REPO = {
    "run.sh": b"#!/bin/bash\r\necho 100%, done: ok\r\n",
    ".gitattributes": "*.sh text eol=lf\n",
}


@pytest.fixture
def bad_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", BAD_REPO, executable=("run.sh",))


def test_version_and_module_entry(tmp_path: Path) -> None:
    proc = run_subprocess("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"rentcheck {__version__}\n")


def test_bad_config_is_one_line_exit_2_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("selectt: [RC1]\n")
    proc = run_subprocess("check", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "unknown key 'selectt'" in proc.stderr and "Traceback" not in proc.stderr


def test_usage_error_exit_2(cli, tmp_path: Path) -> None:
    assert cli("check", "--output-format", "xml", cwd=tmp_path).code == 2
    assert cli("nosuchcommand", cwd=tmp_path).code == 2


def test_fail_level_and_exit_zero(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"a.sh": "#!/bin/sh\n", ".gitattributes": "*.sh eol=lf\n"}
    )  # RC103 warning (a preview rule)
    assert cli("check", "--preview", cwd=repo).code == 1
    assert cli("check", "--preview", "--fail-level", "error", cwd=repo).code == 0
    assert cli("check", "--preview", "--exit-zero", cwd=repo).code == 0


def test_output_file_is_written_and_stdout_stays_empty(cli, bad_repo: Path) -> None:
    result = cli("check", "--output-format", "json", "-o", "report.json", cwd=bad_repo)
    assert result.code == 1 and result.out == ""
    doc = json.loads((bad_repo / "report.json").read_text())
    assert doc["summary"]["by_code"] == {"RC101": 1}


def test_concise_and_text_formats(cli, bad_repo: Path) -> None:
    concise = cli("check", "--output-format", "concise", cwd=bad_repo).out.splitlines()
    assert concise[0].startswith("run.sh:1:12: RC101 [*] CRLF line endings (2 of 2 lines); bash")
    assert concise[-1].startswith("Found 1 finding")
    text = cli("check", cwd=bad_repo).out
    assert "help: Run `rentcheck check --fix`" in text and "\x1b[" not in text


def test_color_is_opt_in_off_a_tty(cli, bad_repo: Path) -> None:
    assert "\x1b[" in cli("check", "--color", "always", cwd=bad_repo).out


def test_rule_explains_what_why_example_fix(cli, tmp_path: Path) -> None:
    result = cli("rule", "RC101", cwd=tmp_path)
    assert result.code == 0
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix"):
        assert heading in result.out
    assert cli("rule", "crlf-line-endings", cwd=tmp_path).out == result.out
    missing = cli("rule", "RC1O1", cwd=tmp_path)
    assert missing.code == 2 and "did you mean RC101" in missing.err


def test_rules_lists_every_rule_as_text_and_json(cli, tmp_path: Path) -> None:
    listed = json.loads(cli("rules", "--output-format", "json", cwd=tmp_path).out)
    codes = [r["code"] for r in listed]
    assert {"RC101", "RC102", "RC103", "RC900"} <= set(codes)
    text = cli("rules", cwd=tmp_path).out
    assert all(code in text for code in codes)


def test_internal_errors_are_one_line(tmp_path: Path) -> None:
    # A directory named like the output file makes the atomic write fail for real.
    (tmp_path / "out.json").mkdir()
    (tmp_path / "a.sh").write_text("#!/bin/sh\n")
    proc = run_subprocess("check", "-o", "out.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    debug = run_subprocess("check", "-o", "out.json", "--debug", cwd=tmp_path)
    assert "Traceback" in debug.stderr


def test_env_overrides_reach_the_cli(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BAD_REPO, executable=("run.sh",))
    proc = run_subprocess("check", cwd=repo, env={**os.environ, "RENTCHECK_IGNORE": "RC101"})
    assert proc.returncode == 0, proc.stdout


def test_command_index_matches_what_modules_register() -> None:
    import argparse
    import importlib

    from rentcheck.cli import _command_index, _common
    from rentcheck.gates.table import GATES, command_modules

    registered: dict[str, str] = {}
    for module in command_modules(GATES):
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"rentcheck.commands.{module}").add_parsers(sub, _common())
        registered.update(dict.fromkeys(sub.choices, module))
    assert registered == _command_index()


def test_a_lint_run_imports_no_gate_command_module(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from rentcheck.cli import main; main(['check', '--exit-zero', '.']);"
        "print(sorted(m for m in sys.modules if m.startswith('rentcheck.commands.')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    # finish is the one emit path every gate command shares, not a gate's module
    shown = "['rentcheck.commands.check', 'rentcheck.commands.finish']"
    assert proc.stdout.strip().splitlines()[-1] == shown


def test_cli_exit_error_is_the_report_exit_error() -> None:
    from rentcheck import cli, report

    assert cli.EXIT_ERROR == report.EXIT_ERROR == 2

"""Importing the CLI and the pytest plugin must not pull heavy optional dependencies."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "paramiko", "safetensors", "requests", "numpy", "yaml")


def test_cli_and_plugin_imports_stay_light() -> None:
    code = (
        "import sys, rentcheck.cli, rentcheck.pytest_plugin\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == ""
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if "|" in line
    }
    assert not imported & set(HEAVY)


def test_a_lint_run_stays_light_too(tmp_path) -> None:
    (tmp_path / "a.sh").write_text("#!/bin/sh\necho hi\n")
    code = (
        "import sys; from rentcheck.cli import main; main(['check', '--exit-zero', '.']);"
        f"print('HEAVY=' + ' '.join(m for m in {HEAVY[:4]!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "HEAVY=\n" in proc.stdout


def test_a_cached_lint_run_loads_no_parser_or_check_code(tmp_path) -> None:
    """The pre-commit case: every file answered from the cache. Start-up is most of such a
    run, so it must not load typing, ast, dataclasses/inspect, tree-sitter or the rules' check
    code."""
    (tmp_path / "a.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "train.py").write_text("import os\nprint(os.getcwd())\n")
    unwanted = (
        "typing",
        "ast",
        "dataclasses",
        "inspect",
        "tree_sitter",
        "rentcheck.lint.shell.tree",
        "rentcheck.lint.python.syntax",
        "rentcheck.lint.python.checkpoint_checks",
    )
    code = (
        "import sys; from rentcheck.cli import main; main(['check', '--exit-zero', '.']);"
        f"print('LOADED=' + ' '.join(m for m in {unwanted!r} if m in sys.modules))"
    )

    def run() -> str:
        return subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout

    assert "rentcheck.lint.python.checkpoint_checks" in run()  # cold: the checks ran
    assert "LOADED=\n" in run()

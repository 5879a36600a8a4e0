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
        "tree_sitter._binding",
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


def test_a_cold_shell_run_loads_the_parser_without_its_packages_imports(tmp_path) -> None:
    """A cold run parses, but tree-sitter's compiled modules are loaded without the packages'
    __init__, which import typing and importlib.resources (40 ms per worker process); the
    shell tree module itself declares no dataclasses."""
    (tmp_path / "a.sh").write_text("#!/bin/sh\ncp a b; echo synced\n")
    unwanted = ("typing", "dataclasses", "inspect", "importlib.resources", "tree_sitter")
    code = (
        "import sys; from rentcheck.cli import main;"
        "main(['check', '--exit-zero', '--no-cache', '--select', 'RC1', '.']);"
        f"print('LOADED=' + ' '.join(m for m in {unwanted!r} if m in sys.modules));"
        "print('PARSER=' + str('tree_sitter_bash._binding' in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "RC104" in out  # the copy-success rule ran on the parse
    assert "PARSER=True" in out and "LOADED=\n" in out, out


def test_the_directly_loaded_binding_is_the_one_tree_sitter_then_uses() -> None:
    """Loaded first without its package, the compiled module is registered under its own
    name, so a later ordinary import finds it instead of loading it again."""
    code = (
        "import sys\n"
        "from rentcheck.lint.shell import grammar\n"
        "loaded = grammar.binding('tree_sitter')\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "assert sys.modules['tree_sitter._binding'] is loaded\n"
        "assert grammar.binding('tree_sitter') is loaded\n"
        "root = grammar.parser().parse(b'echo hi').root_node\n"
        "import tree_sitter\n"
        "assert sys.modules['tree_sitter._binding'] is loaded\n"
        "assert tree_sitter.Node is type(root) and tree_sitter.Parser is loaded.Parser\n"
        "print('OK')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "OK"

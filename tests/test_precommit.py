"""The pre-commit hooks: valid by pre-commit's own manifest validation, and working for real
through ``pre-commit try-repo`` on a temporary repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT, make_repo

pytest.importorskip("pre_commit")
HEAVY_EXTRAS = ("torch", "paramiko", "safetensors", "requests", "numpy")


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_manifest_passes_pre_commits_validation(tmp_path: Path) -> None:
    proc = _pre_commit(
        "validate-manifest", str(REPO_ROOT / ".pre-commit-hooks.yaml"), cwd=tmp_path, home=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hooks_stay_light() -> None:
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert "rentcheck-shell" in {h["id"] for h in hooks}
    for hook in hooks:
        deps = " ".join(hook.get("additional_dependencies", []))
        assert not any(heavy in deps for heavy in HEAVY_EXTRAS), hook["id"]
    shell = next(h for h in hooks if h["id"] == "rentcheck-shell")
    assert shell["types"] == ["shell"]
    python = next(h for h in hooks if h["id"] == "rentcheck-python")
    assert python["types"] == ["python"]


def test_try_repo_runs_the_shell_hook(tmp_path: Path) -> None:
    home = tmp_path / "pre-commit-home"
    repo = make_repo(
        tmp_path / "user-repo",
        {
            "launch.sh": b"#!/usr/bin/env bash\r\necho start\r\n",
            ".gitattributes": "*.sh text eol=lf\n",
            "notes.txt": "not a script\r\n",
        },
        executable=("launch.sh",),
    )
    failing = _pre_commit(
        "try-repo", str(REPO_ROOT), "rentcheck-shell", "--all-files", cwd=repo, home=home
    )
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "launch.sh:1:" in failing.stdout and "RC101" in failing.stdout
    assert "notes.txt" not in failing.stdout

    (repo / "launch.sh").write_bytes(b"#!/usr/bin/env bash\necho start\n")
    passing = _pre_commit(
        "try-repo", str(REPO_ROOT), "rentcheck-shell", "--all-files", cwd=repo, home=home
    )
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_hook_dependencies_are_the_extras_they_stand_for() -> None:
    """A hook installs its extra's requirements itself (pre-commit does not read extras):
    they must not drift apart, e.g. a tree-sitter older than the rules need."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the backport rentcheck depends on there
        import tomli as tomllib

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    # The parser is a core dependency: the shell hook needs nothing beyond rentcheck itself.
    assert "additional_dependencies" not in hooks["rentcheck-shell"]
    core = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {"tree-sitter>=0.25", "tree-sitter-bash>=0.23"} <= set(core)
    assert hooks["rentcheck-python"]["additional_dependencies"] == extras["lint-python"]

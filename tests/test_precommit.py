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
    # [text], not [shell]: rentcheck's discovery picks the scripts (issue 30: pre-commit's
    # `shell` type skipped a shebang script without the exec bit that `rentcheck check` lints)
    assert shell["types"] == ["text"]
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


def test_the_shell_hook_lints_a_shebang_script_without_the_exec_bit(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "user-repo",
        {
            "tool": b"#!/bin/bash\r\necho start\r\n",  # no .sh, no exec bit: still a script
            ".gitattributes": "* text eol=lf\n",
            "notes.txt": "not a script\r\n",
        },
    )
    home = tmp_path / "pre-commit-home"
    proc = _pre_commit(
        "try-repo", str(REPO_ROOT), "rentcheck-shell", "--all-files", cwd=repo, home=home
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "tool:1:" in proc.stdout and "RC101" in proc.stdout
    assert "notes.txt" not in proc.stdout


def _readme_local_config() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    start = readme.index("```yaml", readme.index("a `repo: local` hook"))
    return readme[start + len("```yaml\n") : readme.index("```", start + 7)]


def test_readmes_local_hook_runs_serially_and_fixes_the_same_way_each_time(
    tmp_path: Path,
) -> None:
    """With --fix, pre-commit's parallel batches raced on .gitattributes (one try in three lost
    the `*.sh` line): three fresh repositories, three identical results."""
    config = _readme_local_config()
    [hook] = yaml.safe_load(config)["repos"][0]["hooks"]
    assert hook["require_serial"] is True and "--fix" in hook["entry"]
    files: dict[str, bytes | str] = {
        f"s{i:02d}.sh": b"#!/bin/bash\r\necho hi\r\n" for i in range(40)
    }
    files.update({f"bin/t{i:02d}": "#!/bin/sh\necho hi\n" for i in range(40)})
    files[".pre-commit-config.yaml"] = config
    env_path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    seen = []
    for attempt in range(3):
        repo = make_repo(tmp_path / f"repo{attempt}", files)
        home = tmp_path / "pre-commit-home"
        env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
        env["PATH"] = env_path
        proc = subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--all-files"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        attributes = (repo / ".gitattributes").read_text()
        crlf = sorted(p.name for p in repo.glob("*.sh") if b"\r" in p.read_bytes())
        seen.append((proc.returncode, attributes, crlf))
    assert seen[0][0] == 1, seen[0]  # files were fixed: pre-commit reports the change
    assert "*.sh text eol=lf" in seen[0][1] and seen[0][2] == []
    assert seen[1] == seen[0] and seen[2] == seen[0]


def test_the_profiles_hook_on_named_files_records_nothing(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"profiles/acme.md": "# not a profile\n"})
    res = cli("profiles", "check", "profiles/acme.md", cwd=repo)
    assert res.code == 1, res.out + res.err  # the file fails ...
    assert not (repo / ".rentcheck" / "ledger.jsonl").exists()  # ... and proves nothing

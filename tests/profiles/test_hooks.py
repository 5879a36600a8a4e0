"""The profile hooks in .pre-commit-hooks.yaml: fast format checks on profile files in the
default stages, the calendar-dependent staleness check only in the manual stage. Each hook is
run the way pre-commit runs it: its entry, plus the files its filters select."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, REPO_ROOT, git, make_repo

identify = pytest.importorskip("identify.identify")
HOOKS = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
ACME = (FIXTURES / "profiles" / "user" / "acme.md").read_text()


def _selected(hook: dict[str, Any], repo: Path) -> list[str]:
    files = git(repo, "ls-files").split()
    pattern = re.compile(hook.get("files", ""))
    wanted = set(hook.get("types", []))
    return [
        f for f in files if pattern.search(f) and wanted <= identify.tags_from_path(str(repo / f))
    ]


def _run(
    hook: dict[str, Any], repo: Path, files: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    entry = shlex.split(hook["entry"])
    assert entry[0] == "rentcheck"
    argv = [sys.executable, "-m", "rentcheck", *entry[1:], *hook.get("args", [])]
    if hook.get("pass_filenames", True):
        argv += files
    return subprocess.run(
        argv, cwd=repo, capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_hook_definitions() -> None:
    profiles, staleness = HOOKS["rentcheck-profiles"], HOOKS["rentcheck-staleness"]
    assert "rentcheck-shell" in HOOKS
    assert profiles["types"] == ["markdown"] and "stages" not in profiles
    assert staleness["stages"] == ["manual"]
    assert staleness["pass_filenames"] is False and staleness["always_run"] is True
    for hook in (profiles, staleness):
        assert hook["language"] == "python" and not hook.get("additional_dependencies")


def test_profiles_hook_checks_only_profile_files(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {
            "profiles/acme.md": ACME,
            "profiles/README.md": "# Our profiles\n",
            "docs/notes.md": "Billed per GB.\n",
            "profiles/acme.txt": "not markdown\n",
        },
    )
    hook = HOOKS["rentcheck-profiles"]
    selected = _selected(hook, repo)
    assert sorted(selected) == ["profiles/README.md", "profiles/acme.md"]
    passing = _run(hook, repo, selected)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    (repo / "profiles" / "acme.md").write_text(ACME.replace("## NETWORK", "## NETWORKING"))
    failing = _run(hook, repo, selected)
    assert failing.returncode == 1 and "RC702" in failing.stdout
    only_readme = _run(hook, repo, ["profiles/README.md"])
    assert only_readme.returncode == 0 and "0 files checked" in only_readme.stdout


def test_staleness_hook_depends_on_the_date(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"profiles/acme.md": ACME, "rentcheck.yaml": 'profiles:\n  paths: ["profiles"]\n'},
    )
    hook = HOOKS["rentcheck-staleness"]
    fresh = _run(hook, repo, [], env={**os.environ, "RENTCHECK_TODAY": "2026-10"})
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    stale = _run(hook, repo, [], env={**os.environ, "RENTCHECK_TODAY": "2027-06"})
    assert stale.returncode == 1 and "RC710" in stale.stdout

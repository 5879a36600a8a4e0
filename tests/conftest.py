"""Shared helpers: real git repositories and in-process / subprocess CLI runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rentcheck.cli import main

# Read once at import: the tests' own environment is scrubbed of RENTCHECK_* variables.
_NO_SKIP = os.environ.get("RENTCHECK_CI_NO_SKIP") == "1"
REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "rentcheck tests",
    "GIT_AUTHOR_EMAIL": "tests@rentcheck.invalid",
    "GIT_COMMITTER_NAME": "rentcheck tests",
    "GIT_COMMITTER_EMAIL": "tests@rentcheck.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No RENTCHECK_* from the developer's shell, a private HOME, a git identity, and a
    private working directory: a command run without ``cwd`` writes its ledger there, never
    into the checkout (where one test's verify once satisfied another test's teardown)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    for name in list(os.environ):
        if name.startswith("RENTCHECK_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


def make_repo(
    path: Path, files: dict[str, bytes | str], *, executable: tuple[str, ...] = ()
) -> Path:
    """A real git work tree with ``files`` written, executable bits set, and all added."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    write_files(path, files, executable=executable)
    git(path, "add", "-A")
    return path


def write_files(
    root: Path, files: dict[str, bytes | str], *, executable: tuple[str, ...] = ()
) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        target.chmod(0o755 if name in executable else 0o644)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Run ``rentcheck ARGS`` in-process from a directory; returns exit code and output."""

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    yield run


def run_subprocess(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m rentcheck ARGS`` as a user would run it (a real process)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under ``.ci/run`` (RENTCHECK_CI_NO_SKIP=1) a skip is a failure: CI installs every tool
    the tests use (sshd, rsync, tmux, chromium, torch), so a skip there means a test that
    silently stopped testing anything."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if _NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (RENTCHECK_CI_NO_SKIP=1): {report.longrepr}"

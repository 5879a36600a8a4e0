"""Helpers for the rule reproductions: lint one script with one rule, run real programs."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set


def flagged(path: Path, code: str) -> list[int]:
    """The lines where rule ``code`` (preview or not) reports ``path``."""
    config = Config(root=str(path.parent), select=(code,), preview=True)
    linter = Linter(config, load_rule_set(with_plugins=False))
    return sorted(f.line or 0 for f in linter.run([str(path)], cache=False).findings)


def write(path: Path, text: str | bytes, mode: int = 0o755) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


def bash(
    script: Path | str,
    *args: str,
    cwd: Path,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a script file (or a -c string) with the real bash, stdin closed."""
    argv = ["bash", str(script), *args] if isinstance(script, Path) else ["bash", "-c", script]
    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        # Buffering is part of what is reproduced: Python's own default, not the caller's.
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, **(env or {})},
    )


def wait_for(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Poll with a generous bound: a hang becomes a failure, never a stuck suite."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)

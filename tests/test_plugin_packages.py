"""The first-party plugins as a user gets them: `pip install ./plugins/...` into a fresh
environment adds their rules to `rentcheck rules` and `rentcheck check`, and `pip uninstall`
takes them away again, leaving every other rule as it was."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ("rentcheck-slurm", "rentcheck-k8s")


def _venv(tmp_path: Path) -> Path:
    """A real virtual environment that sees this one's packages (rentcheck, pip, hatchling)
    through a .pth file, so the test installs only the plugins and needs no network."""
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = [p for p in site.getsitepackages() if os.path.isdir(p)]
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in ours)
    Path(purelib, "zz-outer-env.pth").write_text(lines)
    return python


def _rentcheck(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(python), "-m", "rentcheck", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pip(python: Path, *args: str, cwd: Path) -> None:
    proc = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _codes(python: Path, cwd: Path) -> dict[str, str]:
    proc = _rentcheck(python, "rules", "--output-format", "json", cwd=cwd)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return {r["code"]: r["origin"] for r in json.loads(proc.stdout)}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_install_lists_and_checks_then_uninstall_removes(tmp_path: Path) -> None:
    python = _venv(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "plugins/rentcheck-slurm/tests/fixtures/naive.sbatch", work)
    shutil.copy(ROOT / "plugins/rentcheck-k8s/tests/fixtures/naive-job.yaml", work)
    before = _codes(python, work)
    assert not any(c.startswith(("SLR", "KUBE")) for c in before)

    sources = [str(ROOT / "plugins" / name) for name in PLUGINS]
    _pip(python, "install", "--no-deps", "--no-build-isolation", "--no-index", *sources, cwd=work)
    after = _codes(python, work)
    added = {c: o for c, o in after.items() if c not in before}
    assert {c.rstrip("0123456789") for c in added} == {"SLR", "KUBE"} and len(added) == 14
    assert added["SLR001"] == "plugin slurm (rentcheck_slurm)"
    assert added["KUBE001"] == "plugin k8s (rentcheck_k8s)"
    assert {c: o for c, o in after.items() if c in before} == before  # nothing else changed
    checked = _rentcheck(python, "check", "--output-format", "concise", cwd=work)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "naive.sbatch:3:1: SLR002" in checked.stdout
    assert "naive-job.yaml:23:1: KUBE001" in checked.stdout

    _pip(python, "uninstall", "--yes", *PLUGINS, cwd=work)
    assert _codes(python, work) == before
    clean = _rentcheck(python, "check", "--output-format", "concise", cwd=work)
    assert "SLR" not in clean.stdout and "KUBE" not in clean.stdout

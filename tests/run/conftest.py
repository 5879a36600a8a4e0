"""Fixtures for the smoke and resume tests.

Runs of examples/tinytrain start a torch process each (several seconds on a loaded 2-core box),
so the uninterrupted reference run is shared by every broken resume variant of a session.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# These start real torch training processes; without torch only the other tests are collected.
NEEDS_TORCH = [
    "test_smoke_tinytrain.py",
    "test_smoke_broken.py",
    "test_resume_tinytrain.py",
    "test_resume_broken.py",
    "test_resume_rolling.py",
    "test_resume_lightning.py",
    "test_resume_hf.py",
    "test_resume_accelerate.py",
    "test_smoke_frameworks.py",
]
if importlib.util.find_spec("torch") is None:
    collect_ignore = NEEDS_TORCH


@pytest.fixture(scope="session")
def tinytrain_reference(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One uninterrupted tinytrain resume run, shared by the broken variants."""
    from tinykit import copy_tinytrain, project_config

    from rentcheck.run.resume import run_reference
    from rentcheck.run.settings import resume_settings

    root = copy_tinytrain(tmp_path_factory.mktemp("reference") / "tinytrain")
    with pytest.MonkeyPatch.context() as monkeypatch:
        activate_test_interpreter(monkeypatch)
        settings = resume_settings(project_config(root))
    record = run_reference(settings, workdir_parent=str(tmp_path_factory.mktemp("ref-runs")))
    assert record.result.returncode == 0, record.result.lines[-20:]
    return record


@pytest.fixture(autouse=True)
def _the_test_interpreter_is_the_active_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    activate_test_interpreter(monkeypatch)


def activate_test_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python train.py` runs the active environment's python; here that is the test's own."""
    import os
    import sys

    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    if sys.prefix != sys.base_prefix:
        monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    else:
        monkeypatch.delenv("VIRTUAL_ENV", raising=False)
        bin_dir = os.path.dirname(sys.executable)
        monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture(autouse=True)
def _temp_dirs_under_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gate runs keep their working dirs when they fail; keep those out of the system /tmp."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))

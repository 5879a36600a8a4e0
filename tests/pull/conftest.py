"""Fixtures for the pull tests: one session-wide corpus of real checkpoints, and a real sshd
"box" per test module for the transfer, teardown and fleet tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rentcheck.box.transport import close_all
from tests.box.sshdkit import SshLab, sshd_binary, start_lab

# The corpus needs torch, safetensors and numpy (rentcheck[ckpt] + the pinned torch). Without
# them only the tests of the stdlib-only parts (builder, manifest parser) are collected.
NEEDS_TORCH = [
    "test_pull_clean.py",
    "test_pull_corrupt_twins.py",
    "test_pull_formats.py",
    "test_pull_fuzz.py",
    "test_pull_memory.py",
    "test_pull_roster.py",
    "test_pull_rules_and_edges.py",
]
if not all(importlib.util.find_spec(m) for m in ("torch", "safetensors", "numpy")):
    collect_ignore = NEEDS_TORCH


def _build_corpus(root: Path) -> None:
    from pullkit import build_corpus

    build_corpus(root)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean corpus, built once; copy it (``pulled``) before changing anything."""
    root = tmp_path_factory.mktemp("corpus") / "run"
    _build_corpus(root)
    return root


@pytest.fixture(scope="session")
def corpus_manifest(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PULL_MANIFEST.json for the corpus, built by the stdlib-only module (as on the box)."""
    out = tmp_path_factory.mktemp("manifest") / "PULL_MANIFEST.json"
    from pullkit import run_builder

    run_builder(corpus, "-o", str(out), "--run-id", "run-0001", check=True)
    return out


@pytest.fixture
def pulled(corpus: Path, corpus_manifest: Path, tmp_path: Path) -> Path:
    """A fresh copy of the corpus with its manifest, as a pull would leave it."""
    dest = tmp_path / "pulled"
    shutil.copytree(corpus, dest)
    shutil.copy2(corpus_manifest, dest / "PULL_MANIFEST.json")
    return dest


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    """Real OpenSSH servers on 127.0.0.1 (``box``, ``box-closed`` ... in ``lab.ssh_config``)."""
    if os.geteuid() != 0:
        pytest.skip("the sshd fixture runs sshd as root (it logs in as the current user)")
    if sshd_binary() is None:
        pytest.skip("OpenSSH server missing: apt-get install -y openssh-server")
    lab = start_lab(tmp_path_factory.mktemp("pull-sshlab"))
    yield lab
    close_all()
    lab.stop()

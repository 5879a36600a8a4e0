"""The built wheel: what a user installs has the data files, marker and entry points."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytest.importorskip("hatchling")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    [built] = list(Path(out).glob("rentcheck-*.whl"))
    return zipfile.ZipFile(built)


def test_wheel_carries_types_schema_and_profiles(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "rentcheck/py.typed" in names
    assert "rentcheck/resources/report.schema.json" in names
    assert "rentcheck/resources/status.schema.json" in names  # issue 30: status had none
    profiles = {n for n in names if n.startswith("rentcheck/_profiles/") and n.endswith(".md")}
    assert "rentcheck/_profiles/autodl.md" in profiles
    assert not any(n.startswith(("tests/", "examples/")) for n in names)


def test_wheel_declares_cli_and_pytest_plugin(wheel: zipfile.ZipFile) -> None:
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(meta).decode()
    assert "rentcheck = rentcheck.cli:main" in text
    assert "[pytest11]" in text and "rentcheck = rentcheck.pytest_plugin" in text
    metadata = wheel.read(meta.replace("entry_points.txt", "METADATA")).decode()
    assert "Classifier: Framework :: Pytest" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    # The shell parser is core (a core install lints shell); nothing heavy is.
    names = {r.split()[1].split(">")[0].split(";")[0] for r in core}
    assert names == {"pyyaml", "pytest", "tomli", "tree-sitter", "tree-sitter-bash"}


def test_wheel_and_sdist_ship_the_license(
    wheel: zipfile.ZipFile, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Apache-2.0 (pyproject's license) requires the text to travel with the code (issue 30)."""
    text = (REPO_ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    [licensed] = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(licensed).decode() == text
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = wheel.read(meta).decode()
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    [built] = list(Path(out).glob("rentcheck-*.tar.gz"))
    with tarfile.open(built) as sdist:
        [member] = [m for m in sdist.getmembers() if m.name.endswith("/LICENSE")]
        assert member.name.count("/") == 1  # at the sdist's top level
        extracted = sdist.extractfile(member)
        assert extracted is not None and extracted.read().decode() == text

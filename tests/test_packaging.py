"""The built wheel: what a user installs has the data files, marker and entry points."""

from __future__ import annotations

import subprocess
import sys
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

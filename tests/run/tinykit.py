"""Helpers for the run tests: copies of examples/tinytrain, its broken variants, fake trainer."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from rentcheck.config import Config, load_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
TINYTRAIN = REPO / "examples" / "tinytrain"
FIXTURES = REPO / "tests" / "fixtures"
BROKEN = FIXTURES / "tinytrain_broken"
FAKE_TRAINER = FIXTURES / "fake_trainer" / "fake_train.py"


def copy_tinytrain(dest: Path) -> Path:
    shutil.copytree(
        TINYTRAIN, dest, ignore=shutil.ignore_patterns("__pycache__", "checkpoints", "*.pyc")
    )
    return dest


def variant(name: str) -> dict[str, Any]:
    with (BROKEN / f"{name}.toml").open("rb") as handle:
        return tomllib.load(handle)


def variant_names(gate: str) -> list[str]:
    return sorted(p.stem for p in BROKEN.glob("*.toml") if variant(p.stem)["gate"] == gate)


def make_variant(name: str, dest: Path) -> Path:
    """A copy of tinytrain with the variant's edits applied (each must match exactly once)."""
    copy_tinytrain(dest)
    for edit in variant(name)["edit"]:
        target = dest / edit["file"]
        text = target.read_text()
        assert text.count(edit["old"]) == 1, f"{name}: edit of {edit['file']} no longer applies"
        target.write_text(text.replace(edit["old"], edit["new"]))
    return dest


def project_config(root: Path) -> Config:
    return load_config(str(root), explicit=str(root / "rentcheck.yaml"))


def fake_project(root: Path, smoke_args: str = "", resume_args: str = "", extra: str = "") -> Path:
    """A project whose training command is the stdlib-only fake trainer."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAKE_TRAINER, root / "fake_train.py")
    (root / "rentcheck.yaml").write_text(
        "smoke:\n"
        '  command: "python fake_train.py"\n'
        f"  args: [{smoke_args}]\n"
        "  timeout: 60\n"
        "resume:\n"
        f"  args: [{resume_args}]\n"
        f"{extra}"
    )
    return root


def framework_settings(
    root: Path, files: dict[str, str], resume: str, overrides: dict[str, Any] | None = None
) -> Any:
    """Resume settings of a project made of fixture files (name in the project -> path under
    tests/fixtures) and a ``resume:`` section (its indented lines)."""
    from rentcheck.run.settings import resume_settings

    root.mkdir(parents=True)
    for name, source in files.items():
        shutil.copy(FIXTURES / source, root / name)
    (root / "rentcheck.yaml").write_text("resume:\n" + resume)
    return resume_settings(project_config(root), overrides)

"""The scratch copy a run happens in: the command as typed, from the same relative place."""

from __future__ import annotations

import os
from pathlib import Path

from tinykit import FAKE_TRAINER

from rentcheck.run.scratch import LINK_ABOVE_BYTES, scratch_copy, start_dir
from tests.conftest import git


def _repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("data/\nruns/\n")
    (root / "configs").mkdir()
    (root / "configs" / "x.yaml").write_text("lr: 1\n")
    (root / "train.py").write_text("print('hi')\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "new_module.py").write_text("X = 1\n")  # untracked, not ignored: the user's tree
    (root / "data").mkdir()
    (root / "data" / "shard0.bin").write_bytes(b"\0" * 10)
    (root / "runs").mkdir()
    (root / "runs" / "old.pt").write_bytes(b"old")
    return root


def test_the_copy_holds_the_project_links_data_and_starts_where_the_user_is(
    tmp_path: Path,
) -> None:
    root = _repo(tmp_path / "proj")
    (root / "weights.bin").write_bytes(b"\1" * (LINK_ABOVE_BYTES + 1))
    git(root, "add", "weights.bin")
    dest = tmp_path / "copy"
    dest.mkdir()
    scratch = scratch_copy(str(root), str(dest), excludes=(), links=["data"], cwd=str(root))
    copied = sorted(
        str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink()
    )
    assert copied == [
        ".gitignore",
        "configs/x.yaml",
        "data",
        "new_module.py",
        "train.py",
        "weights.bin",
    ]
    assert os.readlink(dest / "data") == str(root / "data")  # linked, not copied
    assert (dest / "weights.bin").is_symlink() and not (dest / "train.py").is_symlink()
    assert not (dest / "runs").exists() and not (dest / ".git").exists()
    assert scratch.cwd == str(dest) and scratch.origin_cwd == str(root)
    inside = scratch_copy(str(root), str(tmp_path / "c2"), excludes=(), cwd=str(root / "configs"))
    assert inside.cwd == str(tmp_path / "c2" / "configs")


def test_start_dir_is_the_root_when_the_user_is_outside_it(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert start_dir(str(tmp_path / "a"), str(tmp_path)) == "."
    assert start_dir(str(tmp_path / "a"), str(tmp_path / "a" / "b")) == "b"


def test_python_train_py_from_a_subdirectory_runs_as_typed(cli, tmp_path: Path) -> None:
    """The issue's first failure: `command = "python train.py"` could not find the script."""
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "train.py").write_text(FAKE_TRAINER.read_text())
    (root / "scripts" / "settings.json").write_text("{}\n")
    (root / "pyproject.toml").write_text(
        "[tool.rentcheck.smoke]\n"
        'command = "python train.py --steps 2 --ckpt-dir ckpt"\n'
        "timeout = 60\n"
    )
    result = cli("smoke", "--output-format", "json", cwd=root / "scripts")
    assert result.code == 0, result.out
    # Nothing landed in the user's tree: the checkpoints went into the copy.
    assert not (root / "scripts" / "ckpt").exists()
    assert sorted(p.name for p in (root / "scripts").iterdir()) == ["settings.json", "train.py"]

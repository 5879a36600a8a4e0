"""`rentcheck init`: a starter config for the project it finds, valid as written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rentcheck.commands.init import detect, starter_config
from rentcheck.config import load_config
from rentcheck.run.settings import resume_settings, smoke_settings
from tests.conftest import REPO_ROOT

TINYTRAIN = REPO_ROOT / "examples" / "tinytrain"

LIGHTNING_CLI = """\
from lightning.pytorch.cli import LightningCLI
from model import Net

if __name__ == "__main__":
    LightningCLI(Net)
"""
HF_ARGPARSE = """\
import argparse
from transformers import Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--output_dir", default="out")
"""


@pytest.fixture
def tinytrain(tmp_path: Path) -> Path:
    copy = tmp_path / "tinytrain"
    shutil.copytree(TINYTRAIN, copy, ignore=shutil.ignore_patterns("rentcheck.yaml", "__pycache__"))
    return copy


def test_init_writes_a_valid_commented_config_for_tinytrain(cli, tinytrain: Path) -> None:
    result = cli("init", cwd=tinytrain)
    assert result.code == 0, result.err
    assert "entrypoint: train.py; framework: plain PyTorch" in result.err
    text = (tinytrain / "rentcheck.yaml").read_text()
    data = yaml.safe_load(text)
    assert data["smoke"]["command"] == "python train.py"
    assert data["smoke"]["args"] == ["--steps", "{steps}", "--ckpt-every", "1"]
    assert data["resume"]["args"][:4] == [
        "--steps",
        "{steps}",
        "--ckpt-every",
        "{checkpoint_every}",
    ]
    _assert_every_key_commented(text)
    # The gates accept it as it is: every key is one they know.
    config = load_config(str(tinytrain))
    smoke = smoke_settings(config)
    resume = resume_settings(config)
    assert smoke.steps == 2 and resume.steps == 12
    assert resume.checkpoint_dir == "checkpoints"


def _assert_every_key_commented(text: str) -> None:
    """Each key has a comment on the line above or on its own line (sections excepted)."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        header = not line.startswith(" ") and line.endswith(":")  # a section: `smoke:`
        commented = lines[number - 1].lstrip().startswith("#") or "  # " in line
        assert header or commented, f"no comment: {line}"


def test_init_never_replaces_an_existing_config_unless_forced(cli, tinytrain: Path) -> None:
    (tinytrain / "rentcheck.yaml").write_text("select: [RC1]\n")
    refused = cli("init", cwd=tinytrain)
    assert refused.code == 2 and "exists; nothing was written" in refused.err
    assert (tinytrain / "rentcheck.yaml").read_text() == "select: [RC1]\n"
    shown = cli("init", "--stdout", cwd=tinytrain)
    assert shown.code == 0 and shown.out.startswith("# rentcheck settings, written by")
    assert cli("init", "--force", cwd=tinytrain).code == 0
    assert "smoke:" in (tinytrain / "rentcheck.yaml").read_text()


def test_init_refuses_when_pyproject_has_the_table(cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rentcheck]\nselect = ['RC1']\n")
    (tmp_path / "train.py").write_text("import torch\n")
    result = cli("init", cwd=tmp_path)
    assert result.code == 2 and "already has [tool.rentcheck]" in result.err
    assert not (tmp_path / "rentcheck.yaml").exists()


def test_detection_of_frameworks_and_presets(tmp_path: Path) -> None:
    lightning = tmp_path / "l"
    (lightning / "src").mkdir(parents=True)
    (lightning / "src" / "main.py").write_text(LIGHTNING_CLI)
    found = detect(str(lightning))
    assert (found.entrypoint, found.preset) == ("src/main.py", "lightning-cli")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "train_clm.py").write_text(HF_ARGPARSE)
    found = detect(str(hf))
    assert found.preset == "hf-trainer-argparse" and found.ckpt_dir == "out"
    assert detect(str(tmp_path / "l" / "src")).entrypoint == "main.py"
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = detect(str(empty))
    assert nothing.entrypoint is None and nothing.framework == "no entrypoint found"


def test_a_lightning_cli_starter_loads_with_its_preset(cli, tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(LIGHTNING_CLI)
    assert cli("init", cwd=tmp_path).code == 0
    _assert_every_key_commented((tmp_path / "rentcheck.yaml").read_text())
    config = load_config(str(tmp_path))
    assert smoke_settings(config).preset is not None
    assert (
        yaml.safe_load((tmp_path / "rentcheck.yaml").read_text())["resume"]["mode"] == "continues"
    )


INIT_REPOS = REPO_ROOT / "tests" / "fixtures" / "init_repos"


def _repo(tmp_path: Path, name: str) -> Path:
    """A copy of a fixture repository as a git work tree (its `gitignore` becomes the real
    one here, so the fixture does not ignore files of rentcheck's own repository)."""
    import subprocess

    root = tmp_path / name
    shutil.copytree(INIT_REPOS / name, root)
    if (root / "gitignore").exists():
        (root / "gitignore").rename(root / ".gitignore")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_word_language_model_top_level_script_epochs_flag_and_gitignored_data(
    cli, tmp_path: Path
) -> None:
    """pytorch/examples word_language_model: no __main__ block (top-level code), hand SGD,
    `--epochs`, `--save model.pt`, data under a gitignored data/."""
    root = _repo(tmp_path, "word_language_model")
    found = detect(str(root))
    assert found.entrypoint == "main.py"
    assert [c.path for c in found.candidates][:2] == ["main.py", "generate.py"]
    why = found.candidates[0].why()
    assert "runs as a script" in why and "updates parameters by hand" in why
    assert found.steps_args == ("--epochs", "1") and "--epochs" in found.steps_why
    assert found.ckpt_dir == "." and "--save" in found.ckpt_why
    assert found.links == (("data", "ignored by git, read by the code"),)
    assert cli("init", cwd=root).code == 0
    text = (root / "rentcheck.yaml").read_text()
    _assert_every_key_commented(text)
    data = yaml.safe_load(text)
    assert data["smoke"]["command"] == "python main.py"
    assert data["smoke"]["args"] == ["--epochs", "1"] and data["smoke"]["link"] == ["data"]
    config = load_config(str(root))
    assert smoke_settings(config).links == ("data",)
    assert resume_settings(config).checkpoint_dir == "."


def test_chargpt_under_projects_with_its_config_system_steps_key(tmp_path: Path) -> None:
    """minGPT: the entrypoint is projects/chargpt/chargpt.py; mingpt/ is a library; the
    steps limit is the config system's `--trainer.max_iters=`."""
    root = _repo(tmp_path, "chargpt")
    found = detect(str(root))
    assert found.entrypoint == "projects/chargpt/chargpt.py"
    library = [c for c in found.candidates if c.path.startswith("mingpt/")]
    assert all("no __main__ block" in c.why() for c in library)
    assert found.steps_args == ("--trainer.max_iters={steps}",)
    assert "merge_from_args" in found.steps_why and "mingpt/trainer.py" in found.steps_why
    assert found.ckpt_dir == "out/chargpt" and "work_dir" in found.ckpt_why
    text = starter_config(found)
    assert '"--trainer.max_iters={steps}"' in text


def test_hf_run_clm_is_found_by_what_it_is(tmp_path: Path) -> None:
    root = _repo(tmp_path, "hf_clm")
    found = detect(str(root))
    assert found.entrypoint == "examples/pytorch/language-modeling/run_clm.py"
    assert found.preset == "hf-trainer" and found.ckpt_dir == "out"
    assert "runs a Trainer / fit" in found.candidates[0].why()


def test_a_library_train_py_loses_to_the_script_that_runs_it(tmp_path: Path) -> None:
    root = _repo(tmp_path, "lib_train")
    found = detect(str(root))
    assert found.entrypoint == "scripts/pretrain.py"
    assert found.candidates[1].path == "mypkg/train.py"
    assert "no __main__ block" in found.candidates[1].why()
    assert found.steps_args == ("--max_iters", "{steps}") and found.ckpt_dir == "out"


def test_without_an_entrypoint_no_command_is_written_for_a_missing_file(
    cli, tmp_path: Path
) -> None:
    (tmp_path / "notes.py").write_text("print('no torch here')\n")
    assert cli("init", cwd=tmp_path).code == 0
    text = (tmp_path / "rentcheck.yaml").read_text()
    data = yaml.safe_load(text)
    assert "command" not in data["smoke"] and "training-paths" not in (data.get("python") or {})
    assert "No training entrypoint found" in text
    from rentcheck.errors import ConfigError

    with pytest.raises(ConfigError, match="command"):
        smoke_settings(load_config(str(tmp_path)))


def test_entrypoint_flag_picks_a_lower_ranked_candidate(cli, tmp_path: Path) -> None:
    root = _repo(tmp_path, "lib_train")
    result = cli("init", "--entrypoint", "mypkg/train.py", cwd=root)
    assert result.code == 0, result.err
    assert yaml.safe_load((root / "rentcheck.yaml").read_text())["smoke"]["command"] == (
        "python mypkg/train.py"
    )
    assert cli("init", "--force", "--entrypoint", "nope.py", cwd=root).code == 2

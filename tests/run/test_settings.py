"""[tool.rentcheck.smoke] / [tool.rentcheck.resume]: defaults, placeholders, presets, errors."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from rentcheck.config import load_config
from rentcheck.errors import ConfigError
from rentcheck.run.presets import PRESETS
from rentcheck.run.settings import resume_settings, smoke_settings


def _config(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "rentcheck.yaml").write_text(text)
    return load_config(str(tmp_path))


def test_placeholders_defaults_and_the_resume_fallback_to_smoke(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "smoke:\n"
        "  command: '{python} {root}/train.py --cfg \"tiny cfg.yaml\"'\n"
        "  args: ['--steps', '{steps}']\n"
        "  env: {DATA: '{root}/data', DEBUG: true}\n"
        "resume:\n"
        "  args: ['--steps', '{steps}', '--every', '{checkpoint_every}']\n",
    )
    smoke = smoke_settings(config)
    python = smoke.interpreter.path
    # {root} is each run's own copy of the project, so it is filled in per run.
    assert smoke.argv == (python, "{root}/train.py", "--cfg", "tiny cfg.yaml", "--steps", "2")
    assert smoke.argv_in("/scratch/p")[1] == "/scratch/p/train.py"
    assert smoke.env_in("/scratch/p") == {"DATA": "/scratch/p/data", "DEBUG": "true"}
    assert (smoke.steps, smoke.timeout, smoke.offline, smoke.shim) == (2, 300.0, True, "auto")
    resume = resume_settings(config)
    assert resume.argv[-4:] == ("--steps", "12", "--every", "4")
    assert resume.env == smoke.env  # inherited from smoke
    assert resume.signals == (signal.SIGKILL, signal.SIGTERM) and resume.kill_during_save
    # Found from the shim's checkpoint writes unless set (or set by a preset).
    assert resume.checkpoint_dir is None and (resume.rtol, resume.atol) == (0.0, 0.0)


def test_python_as_typed_is_the_active_environment_not_rentchecks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "their-env"
    (env / "bin").mkdir(parents=True)
    interpreter = env / "bin" / "python"
    interpreter.write_text("#!/bin/sh\n")
    interpreter.chmod(0o755)
    monkeypatch.setenv("VIRTUAL_ENV", str(env))
    project = tmp_path / "p"
    project.mkdir()
    smoke = smoke_settings(_config(project, "smoke:\n  command: python train.py --x 1\n"))
    assert smoke.argv == (str(interpreter), "train.py", "--x", "1")
    assert smoke.interpreter.source == "the active environment, $VIRTUAL_ENV"
    assert smoke.interpreter.bin_dir == str(env / "bin")  # first on the run's PATH
    # `python3` too, and `{python}` anywhere; an explicit `python` in the config wins.
    other = smoke_settings(_config(project, "smoke:\n  command: python3 -m pkg {python}\n"))
    assert other.argv == (str(interpreter), "-m", "pkg", str(interpreter))
    named = smoke_settings(
        _config(project, f"smoke:\n  command: python train.py\n  python: {sys.executable}\n")
    )
    assert named.argv[0] == sys.executable and named.interpreter.bin_dir is None


def test_without_an_active_environment_the_projects_venv_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    on_path = bin_dir / "python"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    project = tmp_path / "p"
    project.mkdir()
    config_text = "smoke:\n  command: python train.py\n"
    assert smoke_settings(_config(project, config_text)).argv[0] == str(on_path)
    venv_python = project / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("#!/bin/sh\n")
    venv_python.chmod(0o755)
    smoke = smoke_settings(_config(project, config_text))
    assert smoke.argv[0] == str(venv_python) and smoke.interpreter.source == "the project's .venv"


def test_a_configured_python_or_link_that_does_not_exist_is_a_config_error(
    tmp_path: Path,
) -> None:
    bad_python = _config(tmp_path, "smoke:\n  command: python t.py\n  python: /no/such/py\n")
    with pytest.raises(ConfigError, match=r"smoke.python.*'/no/such/py' is not an interpreter"):
        smoke_settings(bad_python)
    for link, problem in (("data", "does not exist"), ("../up", "inside the project")):
        config = _config(tmp_path, f"smoke:\n  command: python t.py\n  link: [{link}]\n")
        with pytest.raises(ConfigError, match=f"smoke.link.*{problem}"):
            smoke_settings(config)


def test_overrides_win_and_presets_put_their_args_first(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "smoke:\n  command: python run_clm.py\n  preset: hf-trainer\n  args: [--model, tiny]\n",
    )
    smoke = smoke_settings(config, {"steps": 3})
    preset = PRESETS["hf-trainer"]
    assert smoke.argv[1] == "run_clm.py" and smoke.argv[-2:] == ("--model", "tiny")
    assert "--logging_nan_inf_filter" in smoke.argv and smoke.argv[3] == "3"
    assert len(smoke.argv) == 2 + len(preset.smoke_args) + 2
    resume = resume_settings(config, {"command": ["python", "other.py"], "args": []})
    assert resume.argv[1] == "other.py" and resume.checkpoint_dir == "out"


@pytest.mark.parametrize(
    ("section", "text", "message"),
    [
        (
            "smoke",
            "smoke:\n  comand: x\n",
            "smoke.comand in .*unknown key \\(did you mean 'command'",
        ),
        ("smoke", "smoke: {}\n", "smoke.command in .*is not set"),
        ("smoke", "smoke:\n  command: x\n  steps: 0\n", "smoke.steps .*must be an integer >= 1"),
        ("smoke", "smoke:\n  command: x\n  shim: maybe\n", "smoke.shim .*is 'maybe'"),
        ("smoke", "smoke:\n  command: x\n  allow: [gpu-ish]\n", "unknown failure class 'gpu-ish'"),
        ("smoke", "smoke:\n  command: x\n  preset: keras\n", "unknown preset 'keras'"),
        ("smoke", "smoke:\n  command: x\n  step-regex: ['step (\\d+)']\n", "bad regex"),
        ("smoke", "smoke:\n  command: x\n  env: [A]\n", "smoke.env .*must be a table"),
        ("resume", "resume:\n  command: x\n  checkpoint-dir: /abs\n", "must be relative"),
        ("resume", "resume:\n  command: x\n  checkpoint-dir: ../up\n", "must be relative"),
        ("resume", "resume:\n  command: x\n  signals: [SIGSTOP]\n", "unsupported signal"),
        ("resume", "resume:\n  command: x\n  signals: []\n  kill-during-save: false\n", "nothing"),
        ("resume", "resume:\n  command: x\n  rtol: -1\n", "resume.rtol .*>= 0"),
    ],
)
def test_bad_settings_name_the_key_and_the_file(
    tmp_path: Path, section: str, text: str, message: str
) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as info:
        (smoke_settings if section == "smoke" else resume_settings)(config)
    assert "rentcheck.yaml" in str(info.value)


def test_allow_accepts_class_rule_name_or_code(tmp_path: Path) -> None:
    config = _config(
        tmp_path, "smoke:\n  command: x\n  allow: [needs-gpu, smoke-needs-network, rc610]\n"
    )
    assert smoke_settings(config).allow == {"needs-gpu", "needs-network", "outside-sandbox"}


def test_every_preset_fills_its_placeholders(tmp_path: Path) -> None:
    for name, preset in PRESETS.items():
        config = _config(tmp_path, f"smoke:\n  command: train\n  preset: {name}\n")
        for argv in (smoke_settings(config).argv, resume_settings(config).argv):
            assert not any("{" in a and "}" in a and a != "loggers={}" for a in argv), (name, argv)
        assert preset.description


def test_resume_mode_follows_the_preset_and_allow_takes_codes_or_names(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "resume:\n  command: python main.py fit\n  preset: lightning-cli\n"
        "  allow: [RC626, resume-partial-checkpoint-tolerated]\n",
    )
    resume = resume_settings(config)
    assert resume.mode == "continues" and resume.band == 0.5
    assert resume.allow == {"RC626", "RC633"}
    assert resume_settings(config, {"mode": "exact"}).mode == "exact"
    bad = _config(tmp_path, "resume:\n  command: python t.py\n  allow: [RC999]\n")
    with pytest.raises(ConfigError, match=r"resume.allow.*unknown resume rule 'RC999'"):
        resume_settings(bad)
    plain = _config(tmp_path, "resume:\n  command: python t.py\n  mode: sloppy\n")
    with pytest.raises(ConfigError, match=r"resume\.mode"):
        resume_settings(plain)


def test_bare_yaml_off_is_off_for_the_shim_and_the_fork_server(tmp_path: Path) -> None:
    """YAML 1.1 reads a bare `off` as false: it must mean the switch, not a config error."""
    config = _config(tmp_path, "resume:\n  command: python t.py\n  shim: off\n  fork-server: off\n")
    resume = resume_settings(config)
    assert (resume.shim, resume.fork_server) == ("off", "off")
    quoted = _config(tmp_path, "resume:\n  command: python t.py\n  fork-server: 'auto'\n")
    assert resume_settings(quoted).fork_server == "auto"
    bad = _config(tmp_path, "resume:\n  command: python t.py\n  fork-server: always\n")
    with pytest.raises(ConfigError, match=r"resume\.fork-server.*use one of: auto, off"):
        resume_settings(bad)

"""Python rules beyond the fixtures: training-code scoping and the ruff bridge's edges."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set
from tests.conftest import REPO_ROOT

UNSAFE = b"import torch\n\nstate = torch.load('ckpt.pt')\n"


def _codes(root: Path, **config: object) -> list[tuple[str, str]]:
    linter = Linter(Config(root=str(root), **config), load_rule_set(with_plugins=False))  # type: ignore[arg-type]
    return sorted((f.path or "", f.code) for f in linter.run([str(root)], cache=False).findings)


def test_training_paths_scope_the_python_family(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(UNSAFE)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "inspect_ckpt.py").write_bytes(UNSAFE)
    assert _codes(tmp_path, select=("RC203",)) == [
        ("tools/inspect_ckpt.py", "RC203"),
        ("train.py", "RC203"),
    ]
    scoped = {"python": {"training-paths": ["train.py"]}}
    assert _codes(tmp_path, select=("RC203",), sections=scoped) == [("train.py", "RC203")]


def test_bad_training_paths_value_is_a_config_error(tmp_path: Path) -> None:
    from rentcheck.errors import ConfigError

    with pytest.raises(ConfigError, match=r"python\.training-paths"):
        Linter(
            Config(root=str(tmp_path), sections={"python": {"training-paths": "train.py"}}),
            load_rule_set(with_plugins=False),
        )


def test_missing_ruff_is_one_note_not_a_failure(tmp_path: Path) -> None:
    """An interpreter whose bin directory has no ruff, and a PATH without one."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print(undefined_name)\n")
    bare_bin = tmp_path / "bin"
    bare_bin.mkdir()
    (bare_bin / "python").symlink_to(os.path.realpath(sys.executable))
    site = sysconfig.get_paths()["purelib"]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), site]),
        "HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [
            str(bare_bin / "python"),
            "-m",
            "rentcheck",
            "check",
            "--isolated",
            "--no-cache",
            "--select",
            "RC2",
            "--output-format",
            "concise",
            ".",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if "No module named" in proc.stderr:
        pytest.skip(f"cannot run rentcheck from a bare interpreter here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": RC209 ") == 1 and ": RC210 " not in proc.stdout


def test_ruff_answers_are_cached_by_content(tmp_path: Path) -> None:
    """A warm run starts no ruff process and reports the same; an edit is judged afresh.

    ruff is the real binary behind a wrapper that logs each start."""
    import shutil

    real = os.path.join(os.path.dirname(sys.executable), "ruff")
    real = real if os.path.exists(real) else shutil.which("ruff") or ""
    if not real:
        pytest.skip("ruff is not installed (extra lint-python)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print(undefined_name)\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    log = tmp_path / "ruff-starts.log"
    wrapper = bin_dir / "ruff"
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), sysconfig.get_paths()["purelib"]]),
        "HOME": str(tmp_path),
    }

    def check() -> str:
        proc = subprocess.run(
            [
                *(str(bin_dir / "python"), "-m", "rentcheck", "check", "--isolated"),
                *("--select", "RC210", "--output-format", "concise", "."),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if "No module named" in proc.stderr:
            pytest.skip(f"cannot run rentcheck from a bare interpreter here: {proc.stderr}")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return proc.stdout

    cold = check()
    assert "train.py:1:7: RC210 F821" in cold
    assert check() == cold
    assert log.read_text().count("start") == 1
    (work / "train.py").write_text("import os\nprint(other_name)\n")
    edited = check()
    assert "RC210 F401" in edited and "F821 Undefined name `other_name`" in edited
    assert log.read_text().count("start") == 2


def test_a_failed_ruff_run_is_reported_and_not_cached(tmp_path: Path) -> None:
    """ruff crashing once must not leave the file marked clean in the cache."""
    import shutil

    real = os.path.join(os.path.dirname(sys.executable), "ruff")
    real = real if os.path.exists(real) else shutil.which("ruff") or ""
    if not real:
        pytest.skip("ruff is not installed (extra lint-python)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print(undefined_name)\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    broken = tmp_path / "ruff-is-broken"
    broken.touch()
    wrapper = bin_dir / "ruff"
    wrapper.write_text(
        f'#!/bin/sh\nif [ -e "{broken}" ]; then echo boom >&2; exit 2; fi\nexec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), sysconfig.get_paths()["purelib"]]),
        "HOME": str(tmp_path),
    }

    def check() -> str:
        proc = subprocess.run(
            [
                *(str(bin_dir / "python"), "-m", "rentcheck", "check", "--isolated"),
                *("--select", "RC209,RC210", "--output-format", "concise", "."),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if "No module named" in proc.stderr:
            pytest.skip(f"cannot run rentcheck from a bare interpreter here: {proc.stderr}")
        return proc.stdout

    failed = check()
    assert "RC209 ruff failed (exit 2): boom" in failed and "RC210" not in failed
    broken.unlink()
    assert "train.py:1:7: RC210 F821" in check()


def test_ruff_answers_for_stubs_are_not_reused_for_modules(tmp_path: Path) -> None:
    """ruff judges a .pyi stub differently from the same bytes in a .py module."""
    from rentcheck.lint.python.ruff_bridge import _ruff

    if _ruff() is None:
        pytest.skip("ruff is not installed (extra lint-python)")
    # A forward reference: fine in a stub, F821 in a module (annotations run at def time).
    text = b"def f() -> Later: ...\nclass Later: ...\n"
    (tmp_path / "s.pyi").write_bytes(text)
    config = Config(root=str(tmp_path), select=("RC210",))
    linter = Linter(config, load_rule_set(with_plugins=False))
    if linter.run([str(tmp_path)]).findings:
        pytest.skip("this ruff flags the stub too; nothing to compare")
    (tmp_path / "s2.py").write_bytes(text)
    found = linter.run([str(tmp_path)]).findings  # the stub's answer is cached now
    assert [(f.path, f.details.get("ruff_code")) for f in found] == [("s2.py", "F821")]

"""Python rules beyond the fixtures: training-code scoping and the ruff bridge's edges."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
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


def _real_ruff() -> str:
    from rentcheck.lint.python.ruff_bridge import _ruff

    found = _ruff()
    if found is None:
        pytest.skip("ruff is not installed (extra lint-python)")
    return found


def _bare_rentcheck(
    tmp_path: Path, ruff_script: str | None = None
) -> tuple[Path, Callable[..., subprocess.CompletedProcess[str]]]:
    """A project whose train.py uses an undefined name, and a way to run `rentcheck check`
    on it from an interpreter whose bin directory holds only python and, when given, a `ruff`
    shell script (a wrapper around the real binary), with a PATH that has no ruff."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print(undefined_name)\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    if ruff_script is not None:
        (bin_dir / "ruff").write_text(ruff_script)
        (bin_dir / "ruff").chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), sysconfig.get_paths()["purelib"]]),
        "HOME": str(tmp_path),
    }

    def check(*options: str) -> subprocess.CompletedProcess[str]:
        command = [str(bin_dir / "python"), "-m", "rentcheck", "check", "--isolated"]
        proc = subprocess.run(
            [*command, "--output-format", "concise", *options, "."],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if "No module named" in proc.stderr:
            pytest.skip(f"cannot run rentcheck from a bare interpreter here: {proc.stderr}")
        return proc

    return work, check


def test_missing_ruff_is_one_note_not_a_failure(tmp_path: Path) -> None:
    """An interpreter whose bin directory has no ruff, and a PATH without one."""
    _, check = _bare_rentcheck(tmp_path)
    proc = check("--no-cache", "--select", "RC2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": RC209 ") == 1 and ": RC210 " not in proc.stdout


def test_ruff_answers_are_cached_by_content(tmp_path: Path) -> None:
    """A warm run starts no ruff process and reports the same; an edit is judged afresh.

    ruff is the real binary behind a wrapper that logs each start."""
    log = tmp_path / "ruff-starts.log"
    wrapper = f'#!/bin/sh\necho start >> "{log}"\nexec "{_real_ruff()}" "$@"\n'
    work, check = _bare_rentcheck(tmp_path, wrapper)

    def findings() -> str:
        proc = check("--select", "RC210")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return proc.stdout

    cold = findings()
    assert "train.py:1:7: RC210 F821" in cold
    assert findings() == cold
    assert log.read_text().count("start") == 1
    (work / "train.py").write_text("import os\nprint(other_name)\n")
    edited = findings()
    assert "RC210 F401" in edited and "F821 Undefined name `other_name`" in edited
    assert log.read_text().count("start") == 2


def test_a_failed_ruff_run_is_reported_and_not_cached(tmp_path: Path) -> None:
    """ruff crashing once must not leave the file marked clean in the cache."""
    broken = tmp_path / "ruff-is-broken"
    broken.touch()
    wrapper = (
        f'#!/bin/sh\nif [ -e "{broken}" ]; then echo boom >&2; exit 2; fi\n'
        f'exec "{_real_ruff()}" "$@"\n'
    )
    _, check = _bare_rentcheck(tmp_path, wrapper)
    failed = check("--select", "RC209,RC210").stdout
    assert "RC209 ruff failed (exit 2): boom" in failed and "RC210" not in failed
    broken.unlink()
    assert "train.py:1:7: RC210 F821" in check("--select", "RC209,RC210").stdout


def test_ruff_answers_for_stubs_are_not_reused_for_modules(tmp_path: Path) -> None:
    """ruff judges a .pyi stub differently from the same bytes in a .py module."""
    _real_ruff()
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

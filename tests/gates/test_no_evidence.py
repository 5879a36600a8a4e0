"""No evidence, no pass: a gate that saw less than its row says it must see fails RC914,
naming what was missing, on every surface (CLI, pytest, ledger)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_repo


def _ledger(root: Path) -> list[dict[str, object]]:
    path = root / ".rentcheck" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_check_on_zero_files_fails_and_names_the_config_keys(tmp_path: Path, cli) -> None:
    repo = make_repo(tmp_path / "p", {"notes.md": "nothing the lint gate reads\n"})
    res = cli("check", cwd=repo)
    assert res.code == 1, res.out
    assert "RC914 the lint gate saw 0 files linted" in res.out
    assert "exclude" in res.out and "training-paths" in res.out
    assert "All checks passed" not in res.out
    assert [(e["gate"], e["verdict"], e["failing"]) for e in _ledger(repo)] == [
        ("lint", "fail", ["RC914"])
    ]


def test_check_with_training_paths_that_match_nothing_fails(tmp_path: Path, cli) -> None:
    repo = make_repo(
        tmp_path / "p",
        {
            "src/train.py": "print('x')\n",
            "rentcheck.yaml": "python:\n  training-paths: [nope/*.py]\n",
        },
    )
    res = cli("check", cwd=repo)
    # The training-paths `rentcheck init` once wrote for a repo whose code lives elsewhere:
    # train.py is outside them, so nothing was linted, and that is a failure naming the key.
    assert res.code == 1, res.out
    assert "RC914" in res.out and "python.training-paths" in res.out


def test_smoke_without_a_step_or_the_shim_cannot_pass(tmp_path: Path, cli) -> None:
    """`shim: off` used to turn smoke into "exit 0": with no step seen in the log either,
    the gate saw 0 optimizer steps and fails, saying how to let it see them."""
    repo = make_repo(
        tmp_path / "p",
        {
            "train.py": "print('loading data')\nprint('done')\n",
            "rentcheck.yaml": f"smoke:\n  command: [{sys.executable}, train.py]\n  shim: off\n",
        },
    )
    res = cli("smoke", cwd=repo)
    assert res.code == 1, res.out
    # The smoke gate's own RC613 says it; were it ever to forget, the table's proof (RC914)
    # would: either way the failure names the step-regex that lets the gate see steps.
    assert "RC613" in res.out or "RC914 the smoke gate saw 0 optimizer steps" in res.out
    assert "smoke: FAILED" in res.out and "smoke: PASSED" not in res.out
    assert "step-regex" in res.out


def _pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=repo, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _testpaths_project(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "p",
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            "run.sh": "#!/bin/bash\r\npython train.py\r\n",
            "tests/test_ok.py": "def test_ok():\n    pass\n",
            ".gitattributes": "*.sh text eol=lf\n",
        },
        executable=("run.sh",),
    )


def test_pytest_rentcheck_lints_the_project_whatever_testpaths_says(tmp_path: Path) -> None:
    """With testpaths = ["tests"], `pytest --rentcheck` used to lint tests/ only and pass
    while run.sh (outside tests/) had Windows line endings."""
    repo = _testpaths_project(tmp_path)
    result = _pytest(repo, "--rentcheck")
    out = result.stdout
    assert result.returncode == 1, out
    assert "RC101" in out and "run.sh" in out
    assert "rentcheck lint gate: FAILED" in out
    # The count is honest: every item pytest ran was collected (the test, run.sh, the
    # status item, and the other files a lint rule reads).
    collected = int(re.search(r"collected (\d+) item", out).group(1))  # type: ignore[union-attr]
    last = out.strip().splitlines()[-1]
    ran = sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed)", last))
    assert collected == ran >= 4, out


def test_collect_only_gives_no_verdict(tmp_path: Path) -> None:
    repo = _testpaths_project(tmp_path)
    result = _pytest(repo, "--rentcheck", "--co", "-q")
    assert result.returncode == 0, result.stdout
    assert "rentcheck-status" in result.stdout and "run.sh" in result.stdout
    assert "lint gate" not in result.stdout  # nothing ran: no "FAILED (nothing ran)"


def test_a_typod_gate_marker_is_no_usage_error_when_rentcheck_was_not_asked(
    tmp_path: Path,
) -> None:
    """A plain `pytest` (no rentcheck option) must not exit 4 over rentcheck's marker; with
    rentcheck asked for, the typo is a usage error naming the known gates."""
    repo = make_repo(
        tmp_path / "p",
        {
            "test_it.py": "import pytest\n\n\n@pytest.mark.rentcheck_gate('smok')\n"
            "def test_marked():\n    pass\n\n\ndef test_plain():\n    pass\n",
        },
    )
    plain = _pytest(repo, "-q")
    assert plain.returncode == 0, plain.stdout
    asked = _pytest(repo, "-q", "--rentcheck-gate", "lint")
    assert asked.returncode == 4 and "names no gate" in asked.stderr + asked.stdout


def test_smoke_under_pytest_runs_the_interpreter_running_pytest(tmp_path: Path) -> None:
    """`.venv/bin/pytest` with no venv activated: `python` on PATH may be another one. Under
    pytest the smoke runner's `python` is the interpreter running pytest."""
    repo = make_repo(
        tmp_path / "p",
        {
            "rentcheck.yaml": "smoke:\n  command: [python, train.py]\n  shim: off\n",
            "train.py": "import sys\nprint('step 1 loss 1.0', flush=True)\n"
            "print('PY', sys.executable)\n",
            "test_smoke.py": "import sys\n\n\ndef test_it(rentcheck_smoke):\n"
            "    outcome = rentcheck_smoke.run()\n"
            "    assert outcome.settings.interpreter.path == sys.executable\n",
        },
    )
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text("#!/bin/sh\necho 'not the project interpreter' >&2\nexit 3\n")
    (fake / "python").chmod(0o755)
    env_path = f"{fake}:/usr/bin:/bin"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        cwd=repo, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PATH": env_path, "VIRTUAL_ENV": ""},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_phase_runs_its_gates_in_lifecycle_order(tmp_path: Path) -> None:
    """`--rentcheck-gate pre-rent`: lint's items (0.1 s) come before smoke's and resume's
    (20 s), whatever order the gate modules added them in."""
    repo = make_repo(
        tmp_path / "p",
        {
            "run.sh": "#!/bin/bash\necho hi\n",
            "rentcheck.yaml": "smoke:\n  command: [python, train.py]\nresume:\n  steps: 6\n",
            "train.py": "print('x')\n",
        },
        executable=("run.sh",),
    )
    listed = _pytest(repo, "--rentcheck-gate", "pre-rent", "--co", "-q").stdout.splitlines()
    names = [line for line in listed if "rentcheck" in line or "run.sh" in line]
    smoke = next(i for i, n in enumerate(names) if "rentcheck-smoke" in n)
    resume = next(i for i, n in enumerate(names) if "rentcheck-resume" in n)
    lint = [i for i, n in enumerate(names) if "run.sh" in n or "rentcheck-status" in n]
    assert lint and max(lint) < smoke < resume, names

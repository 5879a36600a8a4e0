"""No evidence, no pass: a gate that saw less than its row says it must see fails RC914,
naming what was missing, on every surface (CLI, pytest, ledger)."""

from __future__ import annotations

import json
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

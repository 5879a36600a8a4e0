"""One verdict: for the lint gate at every fail level, the CLI's exit code, its JSON, the
pytest outcome, the ledger lines and ``rentcheck status`` say the same thing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_repo

LEVELS = [("note", False), ("warning", False), ("error", True)]


@pytest.mark.parametrize(("level", "passes"), LEVELS)
def test_lint_agrees_on_every_surface(tmp_path: Path, level: str, passes: bool) -> None:
    # RC102 (no `*.sh text eol=lf` in .gitattributes) is a warning: it fails at warning and
    # note, and passes at error; every surface must say which.
    repo = make_repo(
        tmp_path / "p",
        {"run.sh": "#!/bin/bash\necho hi\n", "rentcheck.yaml": f"fail-level: {level}\n"},
        executable=("run.sh",),
    )

    def rc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rentcheck", *args],
            cwd=repo, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    cli = rc("check", "--output-format", "json")
    assert cli.returncode == (0 if passes else 1), cli.stdout + cli.stderr
    doc = json.loads(cli.stdout)
    assert doc["gate"]["passed"] is passes
    assert "RC102" in {r["code"] for r in doc["results"]}
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "--rentcheck", "-p", "no:cacheprovider", "-q"],
        cwd=repo, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert tests.returncode == (0 if passes else 1), tests.stdout
    assert f"rentcheck lint gate: {'PASSED' if passes else 'FAILED'}" in tests.stdout
    ledger = [
        json.loads(line) for line in (repo / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    word = "pass" if passes else "fail"
    assert [(e["via"], e["verdict"]) for e in ledger] == [("cli", word), ("pytest", word)]
    status = json.loads(rc("status", "--output-format", "json").stdout)
    [row] = [r for r in status["gates"] if r["gate"] == "lint"]
    assert row["state"] == ("passed" if passes else "failed"), row

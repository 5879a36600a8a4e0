"""A run that misses a gitignored data dir (not in the scratch copy) is told to `link` it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tinykit import project_config

from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke


def test_missing_gitignored_data_says_link_it(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "data" / "train.txt").write_text("tokens\n")
    (root / ".gitignore").write_text("data/\n")
    (root / "train.py").write_text("print(open('data/train.txt').read())\n")
    (root / "rentcheck.yaml").write_text('smoke:\n  command: "python train.py"\n  timeout: 60\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert not outcome.passed
    finding = outcome.findings[0]
    assert finding.code == "RC602", outcome.verdict_lines()
    assert 'add `link: ["data"]` to the smoke section' in finding.message
    # With the link, the data is there (and the run, which takes no step, fails on that only).
    text = (root / "rentcheck.yaml").read_text() + '  link: ["data"]\n'
    (root / "rentcheck.yaml").write_text(text)
    outcome = run_smoke(smoke_settings(project_config(root)), workdir_parent=str(tmp_path))
    assert [f.code for f in outcome.findings] == ["RC613"]

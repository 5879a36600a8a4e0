"""``rentcheck manifest build`` never writes into the run folder and records no pull (issue 30).

Run inside a pulled run folder, it used to create ``.rentcheck/ledger.jsonl`` there, with a
"pull pass" though nothing was pulled; a later verify then failed on rentcheck's own files.
"""

from __future__ import annotations

import json
from pathlib import Path


def _run_folder(root: Path) -> Path:
    (root / "ckpt").mkdir(parents=True)
    (root / "ckpt" / "step-8.txt").write_bytes(b"weights" * 100)
    (root / "train.log").write_text("step 8 loss 0.1\n")
    return root


def _ledger_gates(project: Path) -> list[str]:
    ledger = project / ".rentcheck" / "ledger.jsonl"
    if not ledger.exists():
        return []
    return [json.loads(line)["gate"] for line in ledger.read_text().splitlines()]


def test_build_inside_the_run_folder_writes_only_the_manifest(cli, tmp_path: Path) -> None:
    run = _run_folder(tmp_path / "project" / "run")
    res = cli("manifest", "build", ".", cwd=run)
    assert res.code == 0, res.err
    assert sorted(p.name for p in run.iterdir()) == ["PULL_MANIFEST.json", "ckpt", "train.log"]
    assert _ledger_gates(tmp_path / "project") == []  # no "pull pass": nothing was pulled
    verify = cli("verify", ".", cwd=run)
    assert verify.code == 0, verify.out + verify.err  # no RC507 on rentcheck's own files
    assert not (run / ".rentcheck").exists()
    assert _ledger_gates(tmp_path / "project") == ["verify"]  # verify records, in the project


def test_a_roster_alone_records_nothing_from_the_project_root(cli, tmp_path: Path) -> None:
    _run_folder(tmp_path / "results")
    res = cli("manifest", "build", "results", "--output-format", "json", cwd=tmp_path)
    assert res.code == 0, res.err
    assert json.loads(res.out)["gate"]["name"] == "pull"
    assert _ledger_gates(tmp_path) == []

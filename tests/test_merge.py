"""``rentcheck merge``: real JSON reports of separate runs (one per host, as array tasks or
Indexed Job pods write them) folded into one table and one report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_subprocess


def _task(tmp_path: Path, name: str, budget: str) -> Path:
    """One task's report: `rentcheck audit --host local --output-format json -o FILE`."""
    work = tmp_path / name
    work.mkdir()
    (work / "rentcheck.yaml").write_text(
        "audit:\n  expect_gpu: false\n  paths: {data: /}\n"
        f"  budget: {{checkpoint_bytes: {budget}}}\n"
    )
    out = tmp_path / f"{name}.json"
    proc = run_subprocess(
        "audit", "--host", "local", "--output-format", "json", "-o", str(out), cwd=work
    )
    assert proc.returncode in (0, 1), proc.stderr
    return out


def test_merge_folds_task_reports(tmp_path: Path) -> None:
    ok = _task(tmp_path, "task0", "1KiB")
    full = _task(tmp_path, "task1", "9000TiB")
    merged = run_subprocess("merge", str(ok), str(full), "--output-format", "json", cwd=tmp_path)
    assert merged.returncode == 1, merged.stderr
    doc = json.loads(merged.stdout)
    assert doc["summary"]["reports"] == 2 and doc["summary"]["hosts"] == 2
    assert [r["exit_code"] for r in doc["hosts"]] == [0, 1]
    assert {(r["code"], r["source"]) for r in doc["results"]} == {("RC301", str(full))}
    text = run_subprocess("merge", str(ok), str(full), cwd=tmp_path)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-2].endswith("2 hosts: 1 passed, 1 failed")
    assert "local: RC301 data=/:" in text.stdout
    # A merged report folds again (a fleet of fleets): same rows.
    again = tmp_path / "merged.json"
    again.write_text(merged.stdout)
    assert (
        json.loads(
            run_subprocess("merge", str(again), "--output-format", "json", cwd=tmp_path).stdout
        )["summary"]["findings"]
        == 1
    )


def test_merge_refuses_what_is_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    proc = run_subprocess("merge", str(bad), cwd=tmp_path)
    assert proc.returncode == 2 and "bad.json: not a rentcheck report" in proc.stderr
    (tmp_path / "torn.json").write_text('{"schema": "rentcheck/report/v1", "results": [')
    torn = run_subprocess("merge", str(tmp_path / "torn.json"), cwd=tmp_path)
    assert torn.returncode == 2 and "torn.json: not a JSON report" in torn.stderr


def test_hostile_report_text_is_escaped(tmp_path: Path) -> None:
    evil = {
        "schema": "rentcheck/report/v1",
        "exit_code": 1,
        "host": "box\x1b]0;pwned\x07",
        "results": [{"code": "RC301", "message": "full\x1b[2J", "host": None}],
    }
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(evil))
    proc = run_subprocess("merge", str(path), cwd=tmp_path)
    assert proc.returncode == 1 and "\x1b" not in proc.stdout

"""verify and teardown take settings from the project only, never from the pulled folder.

A box controls every byte it hands over, including a ``rentcheck.yaml`` among the results.
Read as config, it could widen ``allow_globals`` so that a hostile pickle is certified.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pullkit import run_builder

# A pickle whose load would run os.system("true"): never executed, only scanned.
HOSTILE = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."
WIDENING = "verify:\n  allow_globals: [os.system, posix.system]\n"


def _box_results(root: Path) -> Path:
    pulled = root / "pulled"
    pulled.mkdir()
    (pulled / "state.pkl").write_bytes(HOSTILE)
    (pulled / "rentcheck.yaml").write_text(WIDENING)  # planted by the box
    run_builder(pulled, "--run-id", "run-7", check=True)
    return pulled


def test_a_pulled_config_is_never_read_from_inside_the_pull(cli, tmp_path: Path) -> None:
    pulled = _box_results(tmp_path)
    res = cli("verify", ".", "--output-format", "json", cwd=pulled)
    assert res.code == 1, res.out
    doc = json.loads(res.out)
    assert "RC514" in {r["code"] for r in doc["results"]}
    assert doc["verify"]["settings"]["allow_globals"] == []
    assert not (pulled / "PULL_VERIFIED.json").exists()
    # rentcheck's own files (the ledger) go beside the pull, never into it
    assert not (pulled / ".rentcheck").exists()
    assert (tmp_path / ".rentcheck" / "ledger.jsonl").is_file()


def test_naming_a_config_inside_the_pull_is_refused(cli, tmp_path: Path) -> None:
    pulled = _box_results(tmp_path)
    res = cli("verify", str(pulled), "--config", str(pulled / "rentcheck.yaml"), cwd=tmp_path)
    assert res.code == 2
    assert "came from the box" in res.err and "never takes settings from pulled data" in res.err


def test_the_projects_own_config_still_applies(cli, tmp_path: Path) -> None:
    pulled = _box_results(tmp_path)
    (tmp_path / "rentcheck.yaml").write_text(WIDENING)  # the person's own decision
    res = cli("verify", str(pulled), "--output-format", "json", cwd=tmp_path)
    doc = json.loads(res.out)
    assert doc["verify"]["settings"]["allow_globals"] == ["os.system", "posix.system"]
    assert os.path.isfile(pulled / "PULL_VERIFIED.json") is (res.code == 0)

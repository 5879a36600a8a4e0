"""Order: a gate whose prerequisites are missing or stale in the ledger fails, naming them."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from rentcheck.config import load_config
from rentcheck.gates.order import check_order, parse_age
from rentcheck.gates.table import gate_named
from rentcheck.ledger import LEDGER_SCHEMA, append_entry, read_ledger

TINYTRAIN = Path(__file__).resolve().parents[2] / "examples" / "tinytrain"


@pytest.fixture
def tinytrain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # `python train.py` runs in the project's environment: this suite's, as if activated.
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    project = tmp_path / "tinytrain"
    shutil.copytree(TINYTRAIN, project, ignore=shutil.ignore_patterns(".rentcheck", "__pycache__"))
    return project


def _codes(out: str) -> list[str]:
    return [r["code"] for r in json.loads(out)["results"]]


def test_launch_before_smoke_fails_then_passes_and_a_change_makes_smoke_stale(
    cli, tinytrain: Path
) -> None:
    pytest.importorskip("torch")
    early = cli("gate", "launch", "--output-format", "json", cwd=tinytrain)
    assert early.code == 1
    doc = json.loads(early.out)
    missing = {r["details"]["requires"]: r for r in doc["results"] if r["code"] == "RC910"}
    assert {"lint", "smoke", "resume"} <= set(missing)
    assert "run `rentcheck smoke`" in missing["smoke"]["message"]
    assert doc["gate"]["name"] == "launch" and doc["gate"]["passed"] is False

    assert cli("check", cwd=tinytrain).code == 0
    assert cli("smoke", cwd=tinytrain).code == 0
    still = cli("gate", "launch", "--output-format", "json", cwd=tinytrain)
    assert still.code == 1
    assert {r["details"]["requires"] for r in json.loads(still.out)["results"]} >= {"resume"}
    assert cli("resume", cwd=tinytrain).code == 0
    ready = cli("gate", "launch", cwd=tinytrain)
    assert ready.code == 0, ready.out
    assert "no host was given" in ready.out  # the audit requirement is said, not hidden

    train = tinytrain / "train.py"
    train.write_text(train.read_text() + "\n# tuned the learning rate\n")
    status = cli("status", cwd=tinytrain)
    assert status.code == 0
    [smoke_line] = [ln for ln in status.out.splitlines() if ln.split()[1:2] == ["smoke"]]
    assert "stale" in smoke_line and "1 file(s) changed since smoke passed: train.py" in smoke_line
    assert "next: rentcheck check" in status.out
    doc = json.loads(cli("status", "--output-format", "json", cwd=tinytrain).out)
    rows = {row["gate"]: row for row in doc["gates"]}
    assert rows["smoke"]["state"] == "stale" and rows["smoke"]["changed"] == ["train.py"]
    assert rows["launch"]["state"] == "stale"
    stale = cli("gate", "launch", "--output-format", "json", cwd=tinytrain)
    assert stale.code == 1 and "RC911" in _codes(stale.out)


def test_force_needs_a_reason_and_is_recorded(cli, tinytrain: Path) -> None:
    refused = cli("gate", "launch", "--force", cwd=tinytrain)
    assert refused.code == 2 and "--force needs --reason" in refused.err
    forced = cli("gate", "launch", "--force", "--reason", "smoke box is down", cwd=tinytrain)
    assert forced.code == 0, forced.out
    assert "RC913" in forced.out and "forced (smoke box is down)" in forced.out
    [entry] = read_ledger(str(tinytrain)).entries
    assert entry["gate"] == "launch" and entry["verdict"] == "forced"
    assert entry["forced"] == {"reason": "smoke box is down"}


def _pass(root: Path, gate: str, **fields: object) -> None:
    entry = {"schema": LEDGER_SCHEMA, "gate": gate, "verdict": "pass", "unix_time": time.time()}
    entry.update(fields)
    append_entry(str(root), entry)


def test_an_old_audit_or_one_of_another_host_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("launch:\n  audit-max-age: 2h\n")
    config = load_config(str(tmp_path))
    launch = gate_named("launch")
    evidence = {"digest": "sha256:d", "host": "box1", "manifest": None, "_files": {}}
    for gate in ("lint", "smoke"):
        _pass(tmp_path, gate, digest="sha256:d")
    _pass(tmp_path, "audit", host="box2")
    found = check_order(config, launch, read_ledger(str(tmp_path)), evidence)
    assert [(f.code, f.details["requires"]) for f in found] == [("RC910", "audit")]
    assert "run `rentcheck audit --host box1`" in found[0].message
    _pass(tmp_path, "audit", host="box1", unix_time=time.time() - 3 * 3600)
    [old] = check_order(config, launch, read_ledger(str(tmp_path)), evidence)
    assert old.code == "RC911" and "3.0 h old (limit 2.0 h, launch.audit-max-age)" in old.message
    _pass(tmp_path, "audit", host="box1")
    assert check_order(config, launch, read_ledger(str(tmp_path)), evidence) == []
    append_entry(str(tmp_path), {**_failed("smoke"), "digest": "sha256:d"})
    [failed] = check_order(config, launch, read_ledger(str(tmp_path)), evidence)
    assert failed.code == "RC912" and failed.details["requires"] == "smoke"


def _failed(gate: str) -> dict[str, object]:
    return {"schema": LEDGER_SCHEMA, "gate": gate, "verdict": "fail", "unix_time": time.time()}


def test_resume_is_required_only_when_configured(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("smoke:\n  command: python train.py\n")
    config = load_config(str(tmp_path))
    evidence = {"digest": "sha256:d", "host": "box", "manifest": None, "_files": {}}
    found = check_order(config, gate_named("launch"), read_ledger(str(tmp_path)), evidence)
    assert {f.details["requires"] for f in found} == {"lint", "smoke", "audit"}


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("6h", 21600), ("2d", 172800), ("15", 15)]
)
def test_ages(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


def test_a_bad_age_names_the_key(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("launch:\n  audit-max-age: soon\n")
    _pass(tmp_path, "audit", host="box")
    res = cli("gate", "launch", "--host", "box", cwd=tmp_path)
    assert res.code == 2 and "launch.audit-max-age" in res.err and "6h" in res.err


def test_teardown_needs_a_verify_of_the_manifest_on_the_box_now(cli, tmp_path: Path) -> None:
    now = tmp_path / "now.json"
    now.write_text("{}")
    res = cli(
        "teardown", "--verified", str(tmp_path), "--manifest-now", str(now),
        "--meter-stop", "terminate", "--approve", "--output-format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert res.code == 1
    missing = [r for r in json.loads(res.out)["results"] if r["code"] == "RC910"]
    assert missing and missing[0]["details"]["requires"] == "verify"
    assert "teardown gate passed" not in res.out


def test_gate_runs_the_gates_own_command_with_passthrough_args(cli, tmp_path: Path) -> None:
    res = cli("gate", "audit", "--host", "local", "--", "--no-expect-gpu", cwd=tmp_path)
    assert res.code in (0, 1), res.err
    [entry] = read_ledger(str(tmp_path)).entries
    assert entry["gate"] == "audit" and entry["host"] == "local" and entry["via"] == "cli"
    unknown = cli("gate", "lunch", cwd=tmp_path)
    assert unknown.code == 2 and "unknown gate 'lunch'" in unknown.err and "launch" in unknown.err


def test_a_phase_stops_at_its_first_failing_gate(cli, tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(b"#!/bin/sh\r\necho hi\r\n")  # CRLF: lint fails
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "rentcheck.yaml").write_text("smoke:\n  command: python -c pass\n")
    res = cli("gate", "pre-rent", cwd=tmp_path)
    assert res.code == 1 and "RC101" in res.out
    assert [e["gate"] for e in read_ledger(str(tmp_path)).entries] == ["lint"]


def test_status_warns_when_a_profile_in_use_has_gone_stale(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rentcheck.yaml").write_text("audit:\n  profile: autodl\n")
    monkeypatch.setenv("RENTCHECK_TODAY", "2026-11")
    fresh = json.loads(cli("status", "--output-format", "json", cwd=tmp_path).out)
    assert fresh["profiles"] == []
    monkeypatch.setenv("RENTCHECK_TODAY", "2031-01")  # years after every stamp was verified
    res = cli("status", cwd=tmp_path)
    assert "warning: profile autodl has" in res.out and "past the staleness limit" in res.out
    assert "rentcheck stale" in res.out


def test_per_host_table_gates_expand_the_inventory(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("rentcheck.yaml").write_text(
        "hosts:\n  here:\n    alias: local\n    tags: [cpu]\n"
    )
    result = pytester.runpytest_subprocess(
        "--rentcheck-gate", "watch", "--rentcheck-hosts", "all", "-p", "no:cacheprovider"
    )
    # Only the watch gate was asked for: its item, no audit of the host (--rentcheck-gate audit).
    result.assert_outcomes(failed=1)
    assert "rentcheck-audit" not in result.stdout.str()
    # Named by the inventory host, as its audit item and its ledger line are (reached by alias).
    result.stdout.fnmatch_lines(["*rentcheck-watch?here?*", "*RC910 watch needs launch*"])

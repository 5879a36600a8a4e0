"""``rentcheck teardown``: passes only for a verified pull, the same manifest now, and --approve."""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import pytest

from rentcheck.pull.manifest import load_manifest
from rentcheck.pull.teardown import box_now_from_manifest, check_teardown, meter_stop_plan


def later_roster(roster: Path, out: Path, hours: float = 1.0) -> Path:
    """The roster as rebuilt on the box ``hours`` after the pull: same files, a new run id
    and a later ``created_at`` (--manifest-now must be newer than the verified pull)."""
    doc = json.loads(roster.read_text())
    built = datetime.datetime.fromisoformat(doc["created_at"])
    doc["created_at"] = (built + datetime.timedelta(hours=hours)).isoformat()
    doc["run_id"] = "run-0002"
    out.write_text(json.dumps(doc))
    return out


@pytest.fixture
def verified(pulled: Path, cli, tmp_path: Path) -> tuple[Path, Path]:
    """A verified pull and ``now.json``, the roster rebuilt on the box an hour later.
    (It was the pull's own roster copied: since issue 28 that is refused as stale.)"""
    assert cli("verify", str(pulled)).code == 0
    return pulled, later_roster(pulled / "PULL_MANIFEST.json", tmp_path / "now.json")


def teardown(cli, root: Path, now: Path, *args: str):
    return cli("teardown", "--verified", str(root), "--manifest-now", str(now), *args)


def codes(res) -> set[str]:
    return {r["code"] for r in json.loads(res.out)["results"]}


def test_passes_with_approval_and_prints_the_meter_stop(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root, now, "--profile", "runpod", "--approve")
    assert res.code == 0, res.out
    assert "meter stop on runpod: terminate (cannot be undone)" in res.out
    assert "destroys: container-disk (/); volume-disk (/workspace)" in res.out
    assert "keeps:    network-volume" in res.out
    assert "teardown gate passed" in res.out and "never runs" in res.out
    assert "RC805" in res.out  # the irreversible note stays in the record, it does not block


def test_without_approve_it_fails_saying_what_would_be_destroyed(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root, now, "--profile", "vastai", "--output-format", "json")
    assert res.code == 1
    doc = json.loads(res.out)
    [refusal] = [r for r in doc["results"] if r["code"] == "RC804"]
    assert "'destroy' destroys container-instance-disk (/, /workspace)" in refusal["message"]
    assert refusal["details"]["destroys"] == ["container-instance-disk (/, /workspace)"]
    td = doc["teardown"]
    assert doc["gate"]["passed"] is False and td["approved"] is False
    assert td["passed"] is False  # one verdict: the gate block's, judge()'s, in both places
    assert td["meter_stop"]["action"] == "destroy" and td["meter_stop"]["irreversible"] is True
    assert td["runs_platform_commands"] is False
    assert td["added_on_box"] == [] and td["changed_on_box"] == []


def test_reversible_platform_has_no_irreversible_note(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root, now, "--profile", "autodl", "--approve", "--output-format", "json")
    assert res.code == 0 and codes(res) == set()
    assert "shutdown" in json.loads(res.out)["teardown"]["meter_stop"]["action"]


def test_missing_marker_fails(pulled: Path, cli) -> None:
    res = teardown(cli, pulled, pulled / "PULL_MANIFEST.json", "--profile", "runpod",
                   "--approve", "--output-format", "json")  # fmt: skip
    assert res.code == 1
    assert codes(res) == {"RC801", "RC805", "RC910"}  # RC910: no verify in the ledger either
    [missing] = [r for r in json.loads(res.out)["results"] if r["code"] == "RC801"]
    assert "no verified pull" in missing["message"]
    assert missing["path"] == str(pulled / "PULL_VERIFIED.json")


def test_a_file_new_on_the_box_fails_named(verified, cli, tmp_path) -> None:
    root, now = verified
    doc = json.loads(now.read_text())
    doc["files"].append({"path": "ckpt/step_9000.pt", "size": 5, "mtime_ns": 1,
                         "sha256": "ab" * 32})  # fmt: skip
    doc["totals"] = {"files": len(doc["files"]), "bytes": doc["totals"]["bytes"] + 5}
    now.write_text(json.dumps(doc))
    res = teardown(cli, root, now, "--profile", "runpod", "--approve", "--output-format", "json")
    assert res.code == 1
    [added] = [r for r in json.loads(res.out)["results"] if r["code"] == "RC802"]
    assert added["path"] == "ckpt/step_9000.pt" and added["details"]["change"] == "added"
    assert "added on the box since the pull (5 bytes)" in added["message"]
    assert json.loads(res.out)["teardown"]["added_on_box"] == ["ckpt/step_9000.pt"]


def test_a_file_changed_on_the_box_fails_named(verified, cli) -> None:
    root, now = verified
    doc = json.loads(now.read_text())
    doc["files"][0]["sha256"] = "cd" * 32
    now.write_text(json.dumps(doc))
    res = teardown(cli, root, now, "--profile", "runpod", "--approve", "--output-format", "json")
    assert res.code == 1
    [changed] = [r for r in json.loads(res.out)["results"] if r["code"] == "RC802"]
    assert changed["path"] == doc["files"][0]["path"]
    assert changed["details"]["change"] == "changed"


def test_rebuilt_manifest_with_same_files_and_a_new_run_id_passes(verified, cli, tmp_path) -> None:
    # The bug this gate had: a rebuilt roster (new run id, new created_at) always failed.
    root, _ = verified
    pulled_roster = root / "PULL_MANIFEST.json"
    built = load_manifest(pulled_roster).created_at.timestamp()
    while time.time() < built + 1:  # a later second: other bytes, other digest
        time.sleep(0.05)
    other = tmp_path / "rebuilt.json"
    assert (
        cli("manifest", "build", str(root), "--manifest", str(other), "--run-id", "run-0002").code
        == 0
    )
    assert load_manifest(other).sha256 != load_manifest(pulled_roster).sha256
    res = teardown(cli, root, other, "--profile", "runpod", "--approve", "--output-format", "json")
    assert res.code == 0, res.out
    assert codes(res) == {"RC805"}


def test_drifted_sizes_fail_naming_each_file(verified, cli) -> None:
    root, now = verified
    with open(root / "ckpt" / "model_fp16.pt", "ab") as f:
        f.write(b"appended")
    (root / "notes.txt").unlink()
    res = teardown(cli, root, now, "--profile", "runpod", "--approve", "--output-format", "json")
    assert res.code == 1
    drift = {
        r["path"]: r["message"] for r in json.loads(res.out)["results"] if r["code"] == "RC521"
    }
    assert drift == {
        os.path.join(str(root), "ckpt/model_fp16.pt"): "changed since it was verified",
        os.path.join(str(root), "notes.txt"): "gone since it was verified",
    }


def test_unreadable_manifest_now_fails(verified, cli, tmp_path) -> None:
    root, _ = verified
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    res = teardown(cli, root, empty, "--profile", "runpod", "--approve", "--output-format", "json")
    assert res.code == 1 and "RC803" in codes(res)
    res = teardown(cli, root, tmp_path / "absent.json", "--profile", "runpod", "--approve")
    assert res.code == 1 and "RC803" in res.out


def test_marker_path_may_be_given_directly(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root / "PULL_VERIFIED.json", now, "--profile", "autodl", "--approve")
    assert res.code == 0, res.out


def test_platform_is_required_and_unknown_profiles_are_usage_errors(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root, now, "--approve")
    assert res.code == 2 and "--profile NAME" in res.err
    res = teardown(cli, root, now, "--profile", "runpodd", "--approve")
    assert res.code == 2 and "did you mean 'runpod'" in res.err


def test_meter_stop_text_without_a_profile(verified, cli) -> None:
    root, now = verified
    res = teardown(cli, root, now, "--meter-stop", "openstack server delete gpu-1",
                   "--output-format", "json")  # fmt: skip
    assert res.code == 1 and codes(res) == {"RC804", "RC805"}
    plan = json.loads(res.out)["teardown"]["meter_stop"]
    assert plan["action"] == "openstack server delete gpu-1" and plan["irreversible"] is None
    assert plan["destroys"] == ["everything on the box (no profile says what survives)"]
    approved = teardown(cli, root, now, "--meter-stop", "openstack server delete gpu-1",
                        "--approve")  # fmt: skip
    assert approved.code == 0


def test_profile_from_the_teardown_section(verified, cli, tmp_path) -> None:
    root, now = verified
    project = tmp_path / "project"
    project.mkdir()
    (project / "rentcheck.yaml").write_text("teardown:\n  profile: lambda\n")
    res = cli("teardown", "--verified", str(root), "--manifest-now", str(now), "--approve",
              "--output-format", "json", cwd=project)  # fmt: skip
    assert json.loads(res.out)["teardown"]["meter_stop"]["platform"] == "lambda"
    (project / "rentcheck.yaml").write_text("teardown:\n  profiel: lambda\n")
    res = cli("teardown", "--verified", str(root), "--manifest-now", str(now), cwd=project)
    assert res.code == 2 and "did you mean 'profile'" in res.err


def test_check_teardown_api_reads_only(verified) -> None:
    root, now = verified
    before = sorted(p.name for p in root.rglob("*"))
    box_now = box_now_from_manifest(str(now), load_manifest(root / "PULL_MANIFEST.json"))
    plan = meter_stop_plan(None, "shutdown -h now")
    result = check_teardown(root, box_now, plan, approved=True)
    assert result.passed and result.files_checked > 10
    assert sorted(p.name for p in root.rglob("*")) == before


def test_manifest_now_must_prove_it_is_newer_than_the_verified_pull(verified, cli, tmp_path):
    root, _ = verified
    own = root / "PULL_MANIFEST.json"  # the pull's own roster: it says nothing about the box now
    res = teardown(cli, root, own, "--profile", "runpod", "--approve", "--output-format", "json")
    [stale] = [r for r in json.loads(res.out)["results"] if r["code"] == "RC803"]
    assert res.code == 1 and "is the verified pull's own roster" in stale["message"]
    # Rebuilt (another run id, other bytes) but no later than the pull's roster: it may
    # predate the pull.
    earlier = later_roster(own, tmp_path / "earlier.json", hours=-1)
    res = teardown(
        cli, root, earlier, "--profile", "runpod", "--approve", "--output-format", "json"
    )
    [stale] = [r for r in json.loads(res.out)["results"] if r["code"] == "RC803"]
    assert res.code == 1 and "not after the verified pull's roster" in stale["message"]
    # The pulled root's own roster edited: nothing is left to prove "newer" against.
    doc = json.loads(own.read_text())
    doc["run_id"] = "edited"
    own.write_text(json.dumps(doc))
    later = later_roster(own, tmp_path / "later.json")
    res = teardown(cli, root, later, "--profile", "runpod", "--approve",
                   "--output-format", "json")  # fmt: skip
    assert res.code == 1 and "RC803" in codes(res)

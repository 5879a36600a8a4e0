"""``rentcheck resume`` on the real examples/tinytrain: SIGKILL, SIGTERM and a kill mid-save."""

from __future__ import annotations

import json
from pathlib import Path

from tinykit import copy_tinytrain


def test_tinytrain_resumes_exactly_after_every_kill(cli, tmp_path: Path) -> None:
    root = copy_tinytrain(tmp_path / "tinytrain")
    result = cli("resume", "--output-format", "json", cwd=root)
    assert result.code == 0, result.out
    doc = json.loads(result.out)
    resume = doc["resume"]
    assert doc["results"] == [] and resume["passed"]
    assert resume["loss_source"] == "log" and resume["shim"]["status"] == "active"
    by_name = {s["scenario"]: s for s in resume["scenarios"]}
    assert list(by_name) == [
        "SIGKILL between checkpoints",
        "SIGTERM between checkpoints",
        "SIGKILL during a checkpoint write",
    ]
    # 12 steps, a checkpoint every 4: killed half an interval after a checkpoint, resumed
    # right after it; the kill mid-save falls back to the checkpoint before.
    expected = {
        "SIGKILL between checkpoints": (6, 4, 5),
        "SIGTERM between checkpoints": (10, 8, 9),
        "SIGKILL during a checkpoint write": (8, 4, 5),
    }
    for name, (killed_at, durable, first) in expected.items():
        scenario = by_name[name]
        assert scenario["killed_after_step"] == killed_at, scenario
        assert scenario["durable_checkpoint_step"] == durable, scenario
        assert scenario["relaunch_first_step"] == first, scenario
        assert scenario["first_mismatch"] is None and scenario["compared_steps"] >= 2
    cut = by_name["SIGKILL during a checkpoint write"]["cut_file"]
    assert Path(cut).name.startswith(".ckpt-000008.pt.tmp-")
    for name in ("SIGTERM between checkpoints", "SIGKILL during a checkpoint write"):
        assert by_name[name]["final_weights_compared"] and by_name[name]["final_weights_equal"]
    runs = {r["label"]: r for r in resume["runs"]}
    assert runs["kill1"]["signal_sent"] == "SIGKILL" and runs["kill1"]["exit_status"] == -9
    assert runs["kill2"]["signal_sent"] == "SIGTERM" and runs["kill2"]["exit_status"] == -15
    assert runs["save1"]["signal_sent"] == "SIGKILL"
    assert runs["kill3"]["exit_status"] == 0 and runs["save2"]["exit_status"] == 0
    # The reference starts as typed; every chain run forks from its chain's warmed
    # interpreter (and still matches the reference bit for bit, above).
    assert runs["reference"]["started"] == "new process"
    assert all(runs[r]["started"] == "forked" for r in ("kill1", "kill2", "kill3", "save1"))
    # After a clean finish only final checkpoints remain (tinytrain keeps the newest 3).
    assert runs["kill3"]["checkpoint_dir"]["entries"] == [
        "ckpt-000004.pt",
        "ckpt-000008.pt",
        "ckpt-000012.pt",
    ]
    assert resume["workdirs_kept"] == []

"""The resume gate without the step shim (a trainer without torch): kills follow the log and
the checkpoint directory instead of exact pauses, and the verdicts are the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tinykit import fake_project

ARGS = "--steps, '{steps}', --ckpt-every, '{checkpoint_every}', --sleep, '0.15'"


def _resume(cli, root: Path, *extra: str) -> dict:  # type: ignore[no-untyped-def]
    result = cli("resume", "--output-format", "json", *extra, cwd=root)
    doc = json.loads(result.out)
    assert result.code == doc["exit_code"]
    return doc


def test_an_exact_resume_passes_after_sigkill_and_sigterm(cli, tmp_path) -> None:
    doc = _resume(cli, fake_project(tmp_path / "p", resume_args=ARGS), "--no-kill-during-save")
    assert doc["exit_code"] == 0, doc["resume"]["scenarios"]
    assert doc["summary"]["by_code"] == {"RC614": 1}  # a note: no torch, so no shim
    scenarios = doc["resume"]["scenarios"]
    assert [s["scenario"] for s in scenarios] == [
        "SIGKILL between checkpoints",
        "SIGTERM between checkpoints",
    ]
    for scenario in scenarios:
        durable = scenario["durable_checkpoint_step"]
        assert durable >= 4 and scenario["relaunch_first_step"] == durable + 1
        assert scenario["first_mismatch"] is None
    assert scenarios[1]["final_weights_equal"]


def test_a_slow_save_is_caught_growing_and_the_relaunch_falls_back(cli, tmp_path) -> None:
    root = fake_project(tmp_path / "p", resume_args=ARGS + ", --slow-save")
    doc = _resume(cli, root, "--signals", "SIGKILL", "--no-kill-during-save")
    assert doc["exit_code"] == 0
    doc = _resume(cli, root, "--signals", "")
    scenario = doc["resume"]["scenarios"][0]
    assert scenario["scenario"] == "SIGKILL during a checkpoint write" and scenario["ran"]
    assert doc["exit_code"] == 0, scenario
    assert scenario["relaunch_first_step"] == scenario["durable_checkpoint_step"] + 1


@pytest.mark.parametrize(("flag", "code"), [("--never-load", "RC620"), ("--skip-rng", "RC622")])
def test_resume_bugs_are_caught_without_the_shim(cli, tmp_path, flag: str, code: str) -> None:
    root = fake_project(tmp_path / "p", resume_args=f"{ARGS}, {flag}")
    doc = _resume(cli, root, "--signals", "SIGKILL", "--no-kill-during-save")
    assert doc["exit_code"] == 1
    assert [r["code"] for r in doc["results"] if r["severity"] != "note"] == [code]
    assert doc["resume"]["workdirs_kept"]


def test_each_launch_says_when_it_starts_and_ends_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    from tinykit import project_config

    from rentcheck.run.resume import run_resume
    from rentcheck.run.settings import resume_settings

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    root = fake_project(tmp_path / "p", resume_args=ARGS)
    settings = resume_settings(
        project_config(root), {"signals": ["SIGKILL"], "kill-during-save": False}
    )
    outcome = run_resume(settings, workdir_parent=str(tmp_path))
    assert outcome.passed, outcome.verdict_lines()
    lines = terminal.getvalue().splitlines()
    forked = ", forked from the chain's warmed interpreter"
    assert f"resume: kill1: started (SIGKILL between checkpoints{forked})" in lines
    assert "resume: reference: started (to the end)" in lines  # always a new process
    assert any(line.startswith("resume: kill1: SIGKILL sent after ") for line in lines)
    assert any(line.startswith("resume: kill2: exited with status 0") for line in lines)
    assert any(line.startswith("resume: reference: exited with status 0") for line in lines)


def test_an_allowed_resume_finding_is_a_note_and_the_gate_passes(cli, tmp_path) -> None:
    extra = "  allow: [resume-step-reset]\n"
    root = fake_project(tmp_path / "p", resume_args=f"{ARGS}, --never-load", extra=extra)
    doc = _resume(cli, root, "--signals", "SIGKILL", "--no-kill-during-save")
    assert doc["exit_code"] == 0
    step_reset = [r for r in doc["results"] if r["code"] == "RC620"]
    assert step_reset and step_reset[0]["severity"] == "note"
    assert step_reset[0]["message"].endswith("[allowed]")


def test_without_the_shim_or_checkpoint_dir_the_tree_is_watched(cli, tmp_path) -> None:
    """A non-torch trainer saving into out/ckpts: no shim events, no `checkpoint-dir`; the
    kills follow the numbered files that appear anywhere in the run's tree."""
    args = f"{ARGS}, --ckpt-dir, out/ckpts"
    doc = _resume(cli, fake_project(tmp_path / "p", resume_args=args), "--no-kill-during-save")
    assert doc["exit_code"] == 0, doc["resume"]["scenarios"]
    for scenario in doc["resume"]["scenarios"]:
        assert scenario["ran"] and scenario["durable_checkpoint_step"] >= 4
        assert scenario["relaunch_first_step"] == scenario["durable_checkpoint_step"] + 1
    runs = {r["label"]: r for r in doc["resume"]["runs"]}
    assert any(e.startswith("ckpt-") for e in runs["reference"]["checkpoint_dir"]["entries"])


def test_fork_server_off_starts_every_run_anew_with_the_same_verdict(cli, tmp_path) -> None:
    for mode, started in (("auto", "forked"), ("off", "new process")):
        root = fake_project(tmp_path / mode, resume_args=ARGS, extra=f"  fork-server: {mode}\n")
        doc = _resume(cli, root, "--signals", "SIGKILL", "--no-kill-during-save")
        assert doc["exit_code"] == 0, doc["resume"]["scenarios"]
        runs = {r["label"]: r for r in doc["resume"]["runs"]}
        assert runs["reference"]["started"] == "new process"  # always as typed
        assert runs["kill1"]["started"] == runs["kill2"]["started"] == started

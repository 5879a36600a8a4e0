"""The resume verdict from finished runs, as data: which finding each kind of divergence gives."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Iterable
from pathlib import Path

import pytest

from rentcheck.config import load_config
from rentcheck.run.ckptdir import Listing
from rentcheck.run.process import Launch, ProcessResult
from rentcheck.run.resume_judge import judge
from rentcheck.run.runs import Chain, Interrupt, RunRecord
from rentcheck.run.settings import ResumeSettings, resume_settings
from rentcheck.run.shimreport import ShimSummary

REF = {n: f"{1.0 / n:.9e}" for n in range(1, 13)}
CKPT = "/w/checkpoints"
KILL = Interrupt("step", signal.SIGKILL)
SAVE = Interrupt("save", signal.SIGKILL)
OFF = ShimSummary(status="off")


@pytest.fixture
def settings(tmp_path: Path) -> ResumeSettings:
    (tmp_path / "rentcheck.yaml").write_text("resume:\n  command: train\n")
    return resume_settings(load_config(str(tmp_path)))


def log(steps: Iterable[int], losses: dict[int, str] | None = None, digest: str = "a") -> list[str]:
    losses = {**REF, **(losses or {})}
    lines = [f"step={n} loss={losses[n]}" for n in steps]
    return [*lines, f"done weights_sha256={digest * 64}"] if digest else lines


def run(
    lines: list[str],
    entries: Iterable[str] = (),
    *,
    code: int = 0,
    sent: int | None = None,
    shim: ShimSummary = OFF,
) -> RunRecord:
    launch = Launch(argv=("train",), cwd="/w", env={}, timeout=1, shim=False)
    result = ProcessResult(launch, code if sent is None else -sent, False, sent, lines, 1.0, [])
    names = tuple(entries)
    return RunRecord("r", result, shim, Listing(True, names, tuple((n, 1) for n in names)), CKPT)


def ckpts(*steps: int) -> list[str]:
    return [f"ckpt-{s:06d}.pt" for s in steps]


REFERENCE = run(log(range(1, 13)), ckpts(4, 8, 12))


def chain(*runs: RunRecord, plans: tuple[Interrupt, ...] = (KILL,)) -> Chain:
    return Chain("kill", plans, list(runs), "/w")


def codes(settings: ResumeSettings, *chains: Chain, reference: RunRecord = REFERENCE) -> list[str]:
    return [f.code for f in judge(settings, reference, chains).findings]


def test_an_exact_resume_has_no_findings(settings: ResumeSettings) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    relaunch = run(log(range(5, 13)), ckpts(4, 8, 12))
    result = judge(settings, REFERENCE, [chain(killed, relaunch)])
    assert result.findings == [] and result.source == "log"
    (scenario,) = result.scenarios
    assert scenario["killed_after_step"] == 6 and scenario["durable_checkpoint_step"] == 4
    assert scenario["relaunch_first_step"] == 5 and scenario["compared_steps"] == 8
    assert scenario["final_weights_compared"] and scenario["final_weights_equal"]


def test_a_relaunch_from_step_one_is_a_step_reset_even_with_equal_losses(settings) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    assert codes(settings, chain(killed, run(log(range(1, 13)), ckpts(4, 8, 12)))) == ["RC620"]


def test_resuming_from_an_older_checkpoint_is_the_wrong_start(settings) -> None:
    killed = run(log(range(1, 11), digest=""), ckpts(4, 8), sent=signal.SIGKILL)
    assert codes(settings, chain(killed, run(log(range(5, 13)), ckpts(4, 8, 12)))) == ["RC621"]


@pytest.mark.parametrize(("step", "code"), [(5, "RC622"), (6, "RC623"), (9, "RC623")])
def test_the_first_mismatching_step_names_the_cause(settings, step: int, code: str) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    bad = {n: "9.0e+00" for n in range(step, 13)}
    relaunch = run(log(range(5, 13), bad, digest="b"), ckpts(4, 8, 12))
    findings = judge(settings, REFERENCE, [chain(killed, relaunch)]).findings
    # The different final weights follow from the divergence; they are not reported twice.
    assert [f.code for f in findings] == [code]
    assert (
        f"loss at step {step} is 9.0e+00, the uninterrupted run's {REF[step]}"
        in findings[0].message
    )


def test_tolerances_accept_small_differences(settings) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    noisy = {n: f"{1.0 / n * (1 + 1e-7):.9e}" for n in range(5, 13)}
    relaunch = run(log(range(5, 13), noisy), ckpts(4, 8, 12))
    assert codes(settings, chain(killed, relaunch)) == ["RC622"]
    loose = dataclasses.replace(settings, rtol=1e-6)
    assert codes(loose, chain(killed, relaunch)) == []


def test_a_run_that_differs_before_any_kill_is_not_deterministic(settings) -> None:
    killed = run(log(range(1, 7), {2: "7.0e+00"}, digest=""), ckpts(4), sent=signal.SIGKILL)
    relaunch = run(log(range(5, 13), {5: "7.0e+00"}), ckpts(4, 8, 12))
    assert codes(settings, chain(killed, relaunch)) == ["RC628"]


def test_final_weights_or_step_that_differ(settings) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    relaunch = run(log(range(5, 13), digest="f"), ckpts(4, 8, 12))
    findings = judge(settings, REFERENCE, [chain(killed, relaunch)]).findings
    assert [f.code for f in findings] == ["RC624"] and "the run's own digest" in findings[0].message
    short = run(log(range(5, 12)), ckpts(4, 8, 11))
    assert codes(settings, chain(killed, short)) == ["RC624"]


def test_the_kill_during_save_scenario(settings) -> None:
    cut = ShimSummary(status="active", pause={"dest": f"{CKPT}/ckpt-000008.pt"})
    killed = run(log(range(1, 9), digest=""), ckpts(4, 8), sent=signal.SIGKILL, shim=cut)
    crashed = run(
        ["RuntimeError: PytorchStreamReader failed reading zip archive"], ckpts(4, 8), code=1
    )
    findings = judge(settings, REFERENCE, [chain(killed, crashed, plans=(SAVE,))]).findings
    # One finding: the relaunch crashed on the half-written checkpoint.
    assert [f.code for f in findings] == ["RC626"]
    assert "in the middle of writing 'ckpt-000008.pt'" in findings[0].message
    assert "PytorchStreamReader" in findings[0].message
    # Atomic: the cut file is a temp file; the relaunch falls back to step 4 and is exact.
    temp = ShimSummary(status="active", pause={"dest": f"{CKPT}/.ckpt-000008.pt.tmp-9"})
    killed = run(
        log(range(1, 9), digest=""), [*ckpts(4), ".ckpt-000008.pt.tmp-9"], sent=9, shim=temp
    )
    relaunch = run(log(range(5, 13)), ckpts(4, 8, 12))
    assert codes(settings, chain(killed, relaunch, plans=(SAVE,))) == []
    leftover = run(log(range(5, 13)), [*ckpts(4, 8, 12), ".ckpt-000008.pt.tmp-9"])
    assert codes(settings, chain(killed, leftover, plans=(SAVE,))) == ["RC625"]


def test_scenarios_that_could_not_run(settings) -> None:
    never_killed = run(log(range(1, 13)), ckpts(4, 8, 12))
    assert codes(settings, chain(never_killed)) == ["RC629"]
    assert codes(settings, chain(never_killed, plans=(SAVE,))) == ["RC630"]
    failed = run(log(range(1, 3), digest=""), code=1)
    assert codes(settings, chain(failed)) == ["RC627"]


def test_reference_problems_stop_the_judgement(settings) -> None:
    killed = run(log(range(1, 7), digest=""), ckpts(4), sent=signal.SIGKILL)
    any_chain = chain(killed, run(log(range(1, 13)), ckpts(4, 8, 12)))
    assert codes(settings, any_chain, reference=run(["Traceback ..."], code=1)) == ["RC631"]
    no_ckpt = judge(settings, run(log(range(1, 13)), ["config.json"]), [any_chain]).findings
    assert [f.code for f in no_ckpt] == ["RC629"]
    # Where it looked, relative to the run's start, and the fix without the shim.
    assert "no numbered checkpoint in checkpoints;" in no_ckpt[0].message
    assert "set `checkpoint-dir`" in no_ckpt[0].message
    silent = run(["done"], ckpts(4, 8, 12))
    assert codes(settings, any_chain, reference=silent)[0] == "RC632"


def test_without_step_numbers_positions_are_inferred_from_the_losses(settings) -> None:
    hf = dataclasses.replace(settings)  # the default patterns include the HF Trainer dict

    def hf_log(steps: Iterable[int]) -> list[str]:
        return [f"{{'loss': {REF[n]}, 'epoch': 0.1}}" for n in steps]

    reference = run(hf_log(range(1, 13)), ckpts(4, 8, 12))
    killed = run(hf_log(range(1, 7)), ckpts(4), sent=signal.SIGKILL)
    result = judge(hf, reference, [chain(killed, run(hf_log(range(5, 13)), ckpts(4, 8, 12)))])
    assert result.findings == []
    assert result.scenarios[0]["relaunch_first_step"] == 5 and result.scenarios[0]["steps_inferred"]
    reset = run(hf_log(range(1, 13)), ckpts(4, 8, 12))
    assert codes(hf, chain(killed, reset), reference=reference) == ["RC620"]


def test_checkpoint_writes_follow_saves_and_publishes_and_drop_what_a_cut_broke() -> None:
    d = "/run/out"
    saves = (
        {"e": "save", "step": 4, "dest": f"{d}/tmp-checkpoint-4/model.safetensors", "ok": True},
        {"e": "save", "step": 8, "dest": f"{d}/checkpoint-8/model.safetensors", "ok": True},
        {"e": "save", "step": 8, "dest": f"{d}/checkpoint-8/optimizer.pt", "ok": True},
    )
    publishes = ({"e": "publish", "step": 4, "src": f"{d}/tmp-checkpoint-4",
                  "dest": f"{d}/checkpoint-4"},)  # fmt: skip
    whole = ShimSummary(status="active", saves=saves, publishes=publishes)
    # A directory renamed into place counts; files written inside a temp dir do not.
    assert whole.checkpoint_writes() == [
        (8, f"{d}/checkpoint-8/model.safetensors"),
        (8, f"{d}/checkpoint-8/optimizer.pt"),
        (4, f"{d}/checkpoint-4"),
    ]
    pause = {"e": "pause", "reason": "save", "step": 8, "dest": f"{d}/checkpoint-8/optimizer.pt"}
    cut = ShimSummary(status="active", saves=saves, publishes=publishes, pause=pause)
    # Cut while writing checkpoint-8's second file: none of checkpoint-8 is complete.
    assert cut.checkpoint_writes() == [(4, f"{d}/checkpoint-4")]


def test_the_frameworks_own_resume_line_is_evidence() -> None:
    from rentcheck.run.resume_judge import resume_evidence

    assert resume_evidence(["loading", "  Continuing training from global step 8", "x"]) == (
        "Continuing training from global step 8"
    )
    restored = "Restoring states from the checkpoint path at out/last.ckpt"
    assert resume_evidence([restored]) == restored
    assert resume_evidence(["resumed from ckpt/last.pt at step 4"]) is not None
    assert resume_evidence(["step 1 loss 0.5", "saving checkpoint"]) is None


def test_a_reference_that_timed_out_while_stepping_is_told_to_raise_the_timeout(
    settings,
) -> None:
    from dataclasses import replace

    def timed_out(step_times: tuple[float, ...], ended_at: float) -> RunRecord:
        shim = ShimSummary(status="active", steps=3, step_times=step_times)
        slow = run(log(range(1, 4), digest=""), shim=shim)
        launch = replace(slow.result.launch, shim_settings={"RENTCHECK_SHIM_STOP_AFTER": "12"})
        result = replace(
            slow.result, launch=launch, returncode=None, timed_out=True, ended_at=ended_at
        )
        return replace(slow, result=result)

    # Its last step came one step-time before the limit: slow, with the pace and the fix.
    [finding] = judge(settings, timed_out((10.0, 12.0, 14.0), 15.0), []).findings
    assert finding.code == "RC631" and finding.details["class"] == "too-slow"
    assert "too slow for the time limit" in finding.message and "step 3 of 12" in finding.message
    assert "about 2.00 s per step" in finding.message and "about 18 s more" in finding.message
    assert "lower `steps` or raise `timeout` in the resume section" in finding.message
    # No step for 40 s after steps 0.1 s apart: a hang.
    [finding] = judge(settings, timed_out((10.0, 10.1, 10.2), 50.0), []).findings
    assert finding.code == "RC631" and finding.details["class"] == "hang"
    assert "after 3 optimizer step(s), none for 40 s" in finding.message

"""Judging the resume runs: pure comparisons of finished runs against the reference run.

For every kill and the relaunch after it: did the relaunch continue at the newest durable
checkpoint + 1 (not at step 1), does every overlapping step's loss equal the reference's, and
where they first differ (the first resumed step: RNG or data position; later: optimizer or
scheduler); at the end, equal final step and weights, and no temp files left behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.model import Finding, Rule
from rentcheck.run import ckptdir, rules
from rentcheck.run.logparse import find_digest
from rentcheck.run.lossseries import LossComparer
from rentcheck.run.runs import Chain, Interrupt, RunRecord
from rentcheck.run.settings import ResumeSettings

__all__ = ["Judgement", "judge"]


@dataclass
class Judgement:
    findings: list[Finding] = field(default_factory=list)
    scenarios: list[dict[str, Any]] = field(default_factory=list)
    source: str | None = None  # where step losses came from: "log" or "shim"


def _finding(rule: Rule, message: str, scenario: str | None = None, **details: Any) -> Finding:
    if scenario:
        message, details["scenario"] = f"{scenario}: {message}", scenario
    return Finding(rule.code, rule.default_severity, message, details=details)


def judge(settings: ResumeSettings, reference: RunRecord, chains: Sequence[Chain]) -> Judgement:
    out = Judgement()
    add = out.findings.append
    if reference.failed_on_its_own:
        text = f"the uninterrupted run failed: {reference.failure_text()}"
        add(_finding(rules.REFERENCE_FAILED, text, log_tail=reference.result.lines[-40:]))
        return out
    patterns = ckptdir.checkpoint_patterns(reference.listing)
    if not patterns:
        where = settings.checkpoint_dir + ("" if reference.listing.exists else " (does not exist)")
        text = f"the uninterrupted run left no numbered checkpoint in {where}"
        add(_finding(rules.NO_CHECKPOINT, text, entries=list(reference.listing.entries)))
        return out
    compare = LossComparer(settings, reference)
    out.source = compare.source
    if compare.source is None:
        text = "no per-step loss in the reference log and no shim records: relaunches cannot be "
        add(_finding(rules.NO_STEP_RECORDS, text + "compared step by step"))
    temps = ckptdir.temp_files(reference.listing)
    if temps:
        add(_leftover(temps, "the uninterrupted run"))
    for chain in chains:
        _judge_chain(_Context(settings, compare, reference, patterns, out), chain)
    return out


def _leftover(paths: list[str], who: str, scenario: str | None = None) -> Finding:
    shown = ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else "")
    text = f"{who} left temp files in the checkpoint dir: {shown}"
    return _finding(rules.LEFTOVER_TEMP, text, scenario, files=paths)


@dataclass(frozen=True)
class _Context:
    settings: ResumeSettings
    compare: LossComparer
    reference: RunRecord
    patterns: frozenset[str]  # checkpoint names, learned from the reference run
    out: Judgement


def _judge_chain(ctx: _Context, chain: Chain) -> None:
    settings, compare, out = ctx.settings, ctx.compare, ctx.out
    first, plan = chain.runs[0], chain.interrupts[0]
    title = plan.describe()
    add = out.findings.append
    if first.failed_on_its_own:
        text = f"the first run failed before it was interrupted: {first.failure_text()}"
        add(_finding(rules.RELAUNCH_FAILED, text, title, log_tail=first.result.lines[-40:]))
        return
    reliable = True
    if compare.source:
        fresh = compare.compare(first, 1)
        if fresh.first_mismatch is not None:
            reliable = False
            text = (
                f"a fresh run differs from the uninterrupted one at step {fresh.first_mismatch}, "
                "before any kill; resume exactness cannot be judged"
            )
            add(_finding(rules.NOT_DETERMINISTIC, text, title, step=fresh.first_mismatch))
    if not first.interrupted:
        if plan.kind == "save":
            why = "the shim is not active" if not first.shim.active else "no later torch.save"
            text = f"no checkpoint write was caught to kill ({why}); the scenario did not run"
            add(_finding(rules.SAVE_KILL_SKIPPED, text, title))
        else:
            text = (
                "the run ended before it could be killed between two checkpoints (none seen in "
                f"{settings.checkpoint_dir} in time)"
            )
            add(_finding(rules.NO_CHECKPOINT, text, title))
        out.scenarios.append({"scenario": title, "ran": False})
        return
    for index in range(len(chain.runs) - 1):
        killed, relaunch = chain.runs[index], chain.runs[index + 1]
        _judge_link(ctx, chain.interrupts[index], killed, relaunch, reliable)
    final = chain.runs[-1]
    if not final.interrupted and not final.failed_on_its_own:
        _judge_final(ctx, chain, final)


def _judge_link(
    ctx: _Context, plan: Interrupt, killed: RunRecord, relaunch: RunRecord, reliable: bool
) -> None:
    compare, patterns, out = ctx.compare, ctx.patterns, ctx.out
    title = plan.describe()
    add = out.findings.append
    pause = killed.shim.pause if plan.kind == "save" else None
    cut_file = str(pause.get("dest")) if pause and pause.get("dest") else None
    cut_entry = ckptdir.entry_of(cut_file, killed.ckpt_dir)
    durable = ckptdir.durable_step(killed.listing, patterns, exclude=cut_entry)
    killed_series = compare.series(killed)
    at_step = killed_series.steps[-1] if killed_series.steps else killed.shim.steps
    scenario: dict[str, Any] = {
        "scenario": title,
        "ran": True,
        "killed_after_step": at_step,
        "durable_checkpoint_step": durable,
        "cut_file": cut_file,
    }
    out.scenarios.append(scenario)
    if cut_entry is not None and ckptdir.name_pattern(cut_entry) in patterns:
        text = (
            f"the checkpoint was being written under its final name {cut_entry!r}; a kill "
            "leaves a truncated checkpoint there"
        )
        add(_finding(rules.NON_ATOMIC, text, title, file=cut_file))
    if relaunch.failed_on_its_own:
        scenario["relaunch_failed"] = True
        rule = rules.NON_ATOMIC if plan.kind == "save" else rules.RELAUNCH_FAILED
        text = f"the relaunch failed: {relaunch.failure_text()}"
        add(_finding(rule, text, title, log_tail=relaunch.result.lines[-40:]))
        return
    if compare.source is None:
        return
    result = compare.compare(relaunch, durable + 1)
    scenario.update(
        relaunch_first_step=result.first_step,
        relaunch_last_step=result.last_step,
        compared_steps=result.compared,
        first_mismatch=result.first_mismatch,
        steps_inferred=result.inferred,
    )
    if result.first_step is None:
        add(_finding(rules.NO_STEP_RECORDS, "the relaunch logged no step", title))
    elif durable >= 1 and result.first_step <= 1:
        text = (
            f"the relaunch started again at step {result.first_step} although the checkpoint "
            f"of step {durable} was on disk: it never loaded it"
        )
        add(_finding(rules.STEP_RESET, text, title, durable=durable))
    elif result.first_step != durable + 1:
        text = (
            f"the relaunch continued at step {result.first_step}, expected {durable + 1} "
            f"(newest complete checkpoint: step {durable})"
        )
        add(_finding(rules.WRONG_START, text, title, durable=durable))
    if result.first_mismatch is not None and reliable:
        first_resumed = result.first_mismatch == result.first_step
        rule = rules.RNG_OR_DATA if first_resumed else rules.OPTIMIZER
        cause = "RNG state or data position" if first_resumed else "optimizer or LR scheduler state"
        expected, got = result.values
        text = (
            f"the loss at step {result.first_mismatch} is {got}, the uninterrupted run's "
            f"{expected} (first resumed step: {result.first_step}); likely cause: {cause} not "
            "restored"
        )
        add(_finding(rule, text, title, step=result.first_mismatch, expected=expected, got=got))


def _judge_final(ctx: _Context, chain: Chain, final: RunRecord) -> None:
    settings, compare, reference, out = ctx.settings, ctx.compare, ctx.reference, ctx.out
    title = chain.interrupts[-1].describe()
    found = (s for s in reversed(out.scenarios) if s["scenario"] == title)
    scenario: dict[str, Any] = next(found, {})
    problems = []
    last, want = scenario.get("relaunch_last_step"), compare.final_step
    if last is not None and want is not None and last != want:
        problems.append(f"it ended at step {last}, the uninterrupted run at step {want}")
    pairs = [
        ("shim", reference.shim.digest, final.shim.digest),
        (
            "the run's own",
            find_digest(reference.result.lines, settings.digest_patterns),
            find_digest(final.result.lines, settings.digest_patterns),
        ),
    ]
    compared = [(kind, a == b) for kind, a, b in pairs if a and b]
    problems += [f"its final weights differ ({kind} digest)" for kind, same in compared if not same]
    scenario["final_weights_compared"] = bool(compared)
    scenario["final_weights_equal"] = all(same for _, same in compared) if compared else None
    titles = {plan.describe() for plan in chain.interrupts}
    explained = {f.code for f in out.findings if f.details.get("scenario") in titles}
    if problems and not explained & {
        rules.RNG_OR_DATA.code,
        rules.OPTIMIZER.code,
        rules.STEP_RESET.code,
    }:
        out.findings.append(_finding(rules.FINAL_DIFFERS, "; ".join(problems), title))
    temps = ckptdir.temp_files(final.listing)
    if temps:
        out.findings.append(_leftover(temps, "the finished relaunch", title))

"""Judging the resume runs: pure comparisons of finished runs against the reference run.

For every kill and the relaunch after it: did the relaunch continue at the newest durable
checkpoint + 1 (not at step 1), does every overlapping step's loss equal the reference's, and
where they first differ (the first resumed step: RNG or data position; later: optimizer or
scheduler); at the end, equal final step and weights, and no temp files left behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.model import Finding, Rule
from rentcheck.run import ckptdir, rules
from rentcheck.run.logparse import find_digest
from rentcheck.run.lossseries import LossComparer
from rentcheck.run.runs import RESUME_STRETCH, Chain, Interrupt, RunRecord
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
    return rule.finding(message, details=details)


def judge(settings: ResumeSettings, reference: RunRecord, chains: Sequence[Chain]) -> Judgement:
    out = Judgement()
    add = out.findings.append
    if reference.failed_on_its_own:
        failure = reference.failure()
        if failure is not None and failure.kind == "too-slow":
            limit = reference.result.limit_s
            text = (
                f"the uninterrupted run was too slow for the time limit ({limit:.0f} s: "
                f"`timeout` {settings.timeout:g} s, stretched to its measured pace up to "
                f"{RESUME_STRETCH:g}x), not hung: {failure.evidence}, beside the kill chains; "
                f"{failure.detail}, or make the resume args train a smaller model"
            )
        else:
            text = f"the uninterrupted run failed: {reference.failure_text()}"
        tail = reference.result.lines[-40:]
        kind = failure.kind if failure else None
        add(_finding(rules.REFERENCE_FAILED, text, log_tail=tail, **{"class": kind}))
        return out
    patterns = ckptdir.checkpoint_patterns(reference.listing)
    if not patterns and not reference.shim.checkpoint_writes():
        where = os.path.relpath(reference.ckpt_dir, reference.result.launch.cwd)
        where += "" if reference.listing.exists else " (does not exist)"
        if reference.shim.active:
            seen, hint = "the shim saw no checkpoint write and ", ""
        else:
            seen, hint = "", "; without the step shim, set `checkpoint-dir` to where it saves"
        text = f"{seen}the uninterrupted run left no numbered checkpoint in {where}{hint}"
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
        last = _last_step(ctx)
        written = [step for step, _ in first.shim.checkpoint_writes()]
        if plan.kind == "step" and written and first.result.returncode == 0:
            # The kill is planned half an interval after the first checkpoint, before `steps`;
            # a run whose own last step comes earlier ends first.
            text = (
                f"the run ended on its own after step {first.shim.steps} (last step "
                f"{last}) before the planned kill half an interval after its first checkpoint "
                f"(step {min(written)}); the scenario did not run"
            )
            add(_finding(rules.KILL_AFTER_END, text, title, first_checkpoint=min(written)))
            out.scenarios.append({"scenario": title, "ran": False, "why": "kill-after-end"})
            return
        if plan.kind == "save":
            why = "the shim is not active" if not first.shim.active else "no later torch.save"
            text = f"no checkpoint write was caught to kill ({why}); the scenario did not run"
            add(_finding(rules.SAVE_KILL_SKIPPED, text, title))
        else:
            text = (
                "the run ended before it could be killed between two checkpoints (none seen in "
                f"{settings.checkpoint_dir or 'the run'} in time)"
            )
            add(_finding(rules.NO_CHECKPOINT, text, title))
        out.scenarios.append({"scenario": title, "ran": False})
        return
    offset = 0  # global steps before the killed run's first: the shim counts from 0 per process
    for index in range(len(chain.runs) - 1):
        killed, relaunch = chain.runs[index], chain.runs[index + 1]
        # Causes go to the first divergence only: a later relaunch inherits an earlier one's.
        earlier = {plan.describe() for plan in chain.interrupts[:index]}
        inherited = any(
            f.code in _DIVERGED for f in out.findings if f.details.get("scenario") in earlier
        )
        plan = chain.interrupts[index]
        first_step = _judge_link(
            ctx,
            plan,
            killed=killed,
            relaunch=relaunch,
            reliable=reliable and not inherited,
            offset=offset,
        )
        if first_step is None:
            break  # the relaunch failed or logged nothing: later links have no footing
        offset = first_step - 1
    else:
        _not_landed(ctx, chain, offset)
    final = chain.runs[-1]
    if not final.interrupted and not final.failed_on_its_own:
        _judge_final(ctx, chain, final)


def _not_landed(ctx: _Context, chain: Chain, offset: int) -> None:
    """The kills planned after the last relaunch, which ended by itself before its own kill
    (the project's own end came first): reported as not run, never judged."""
    final = chain.runs[-1]
    if final.interrupted or final.failed_on_its_own:
        return
    ran = len(chain.runs) - 1  # kills that landed: every run but the last was killed
    for later in chain.interrupts[ran:]:
        # The relaunch ended by itself before its own kill: that scenario did not run.
        text = (
            f"the relaunch ended on its own after step {offset + final.shim.steps} before "
            "this kill could land; the scenario did not run"
        )
        ctx.out.findings.append(_finding(rules.KILL_AFTER_END, text, later.describe()))
        ctx.out.scenarios.append(
            {"scenario": later.describe(), "ran": False, "why": "kill-after-end"}
        )


MAX_POINTS = 400  # per run: a report's picture needs its shape, not every step


def loss_points(series: Any, first_step: int) -> list[list[float]]:
    """``[step, loss]`` pairs of a series (its own steps, else counted from ``first_step``);
    losses that are not one finite number (a shim's per-group tuple, nan) are left out."""
    import math

    steps = series.steps or list(range(first_step, first_step + len(series.values)))
    points = []
    for step, value in zip(steps, series.values, strict=False):
        try:
            loss = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(loss):
            points.append([step, loss])
    stride = max(1, -(-len(points) // MAX_POINTS))
    return points[::stride]


_DIVERGED = frozenset({rules.RNG_OR_DATA.code, rules.OPTIMIZER.code, rules.STEP_RESET.code})


def _durable(killed: RunRecord, patterns: frozenset[str], offset: int) -> tuple[int, bool]:
    """(newest checkpoint step complete under its final name at the kill, whether the cut
    file carried a final name). The shim's writes decide when it saw any, else the listing."""
    cut_file = killed.shim.cut_file
    writes = killed.shim.checkpoint_writes()
    if writes or killed.shim.saves or killed.shim.publishes:
        durable = offset + max(step for step, _ in writes) if writes else 0
        return durable, cut_file is not None and not ckptdir.is_temp_path(cut_file)
    cut_entry = ckptdir.entry_of(cut_file, killed.ckpt_dir)
    durable = ckptdir.durable_step(killed.listing, patterns, exclude=cut_entry)
    final = cut_entry is not None and ckptdir.name_pattern(cut_entry) in patterns
    return durable, final


def _after_the_end(ctx: _Context, title: str, at_step: int, durable: int) -> bool:
    """A kill that landed when the run was complete: reported as not run (a correct relaunch
    takes no step, which is no restart), never judged."""
    last = _last_step(ctx)
    if last is None or (durable < last and at_step <= last):
        return False
    text = (
        f"the kill landed after step {at_step} with the checkpoint of step {durable} on "
        f"disk, and the run's last step is {last}: nothing was left to resume; the scenario "
        "did not run"
    )
    ctx.out.findings.append(_finding(rules.KILL_AFTER_END, text, title, durable=durable, last=last))
    ctx.out.scenarios.append(
        {"scenario": title, "ran": False, "why": "kill-after-end", "killed_after_step": at_step}
    )
    return True


def _judge_link(
    ctx: _Context,
    plan: Interrupt,
    *,
    killed: RunRecord,
    relaunch: RunRecord,
    reliable: bool,
    offset: int,
) -> int | None:
    """Judge one kill and its relaunch; returns the relaunch's first step (None: unknown)."""
    compare, patterns, out = ctx.compare, ctx.patterns, ctx.out
    title = plan.describe()
    add = out.findings.append
    cut_file = killed.shim.cut_file if plan.kind == "save" else None
    durable, cut_under_final_name = _durable(killed, patterns, offset)
    killed_series = compare.series(killed)
    # The shim counts the steps the killed process took exactly; a log may lag (it logs
    # every N steps, or after the save the kill cut).
    if killed.shim.active and killed.shim.steps:
        at_step = offset + killed.shim.steps
    else:
        at_step = killed_series.steps[-1] if killed_series.steps else offset

    if _after_the_end(ctx, title, at_step, durable):
        return None
    scenario: dict[str, Any] = {
        "scenario": title,
        "ran": True,
        "killed_after_step": at_step,
        "durable_checkpoint_step": durable,
        "cut_file": cut_file,
        # (step, loss) of each run, for the report's picture (numbers only, at most MAX_POINTS)
        "losses": {
            "reference": loss_points(compare.reference, 1),
            "killed": loss_points(killed_series, offset + 1),
        },
    }
    out.scenarios.append(scenario)
    cut_name = os.path.basename(cut_file or "")
    if relaunch.failed_on_its_own:
        scenario["relaunch_failed"] = True
        crashed_on_cut = plan.kind == "save" and cut_under_final_name
        rule = rules.NON_ATOMIC if crashed_on_cut else rules.RELAUNCH_FAILED
        where = f" after a kill in the middle of writing {cut_name!r}" if crashed_on_cut else ""
        text = f"the relaunch failed{where}: {relaunch.failure_text()}"
        add(_finding(rule, text, title, file=cut_file, log_tail=relaunch.result.lines[-40:]))
        return None
    if cut_under_final_name:
        text = (
            f"the checkpoint was visible under its final name {cut_name!r} before it was "
            "complete; the relaunch did not fail on it (it skipped it, fell back, or never "
            "read it), but another reader of that name would get a truncated file"
        )
        add(_finding(rules.PARTIAL_TOLERATED, text, title, file=cut_file))
    if compare.source is None:
        return None
    result = compare.compare(relaunch, durable + 1)
    if result.first_step is not None:
        relaunched = compare.series(relaunch)
        scenario["losses"]["relaunch"] = loss_points(relaunched, result.first_step)
    scenario.update(
        relaunch_first_step=result.first_step,
        relaunch_last_step=result.last_step,
        compared_steps=result.compared,
        first_mismatch=result.first_mismatch,
        steps_inferred=result.inferred,
    )
    evidence = resume_evidence(relaunch.result.lines)
    if evidence:
        scenario["framework_resume_evidence"] = evidence
    if result.first_step is None:
        add(_finding(rules.NO_STEP_RECORDS, "the relaunch logged no step", title))
    elif durable >= 1 and result.first_step <= 1:
        said = (
            f" (its log says {evidence!r}, yet its losses are those of step 1)" if evidence else ""
        )
        text = (
            f"the relaunch started again at step {result.first_step} although the checkpoint "
            f"of step {durable} was on disk: it never loaded it{said}"
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
    return result.first_step


# What frameworks print when they load a checkpoint on start-up: HF Trainer, Lightning,
# accelerate, and the common hand-written "resumed from ..." line.
_RESUMED = re.compile(
    r"Continuing training from (?:checkpoint|global step \d+)|"
    r"Restor(?:ing|ed) (?:all )?states from the checkpoint|Loading states from|"
    r"\bresum(?:ed|ing)(?: training)? from\b",
    re.IGNORECASE,
)


def resume_evidence(lines: Sequence[str]) -> str | None:
    """The relaunch's own line saying it loaded a checkpoint (the first one), if any."""
    return next((line.strip() for line in lines if _RESUMED.search(line)), None)


def _last_step(ctx: _Context) -> int | None:
    """The uninterrupted run's last step: from its step records, else the shim's count."""
    last = ctx.compare.final_step if ctx.compare.source else None
    return last or ctx.reference.shim.steps or None


def _judge_final(ctx: _Context, chain: Chain, final: RunRecord) -> None:
    settings, compare, reference, out = ctx.settings, ctx.compare, ctx.reference, ctx.out
    title = chain.interrupts[len(chain.runs) - 2].describe()  # the last kill that landed
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
    if settings.mode == "continues":
        pairs = []  # another batch order after a mid-epoch resume: other weights, by design
    compared = [(kind, a == b) for kind, a, b in pairs if a and b]
    problems += [f"its final weights differ ({kind} digest)" for kind, same in compared if not same]
    scenario["final_weights_compared"] = bool(compared)
    scenario["final_weights_equal"] = all(same for _, same in compared) if compared else None
    titles = {plan.describe() for plan in chain.interrupts}
    explained = {f.code for f in out.findings if f.details.get("scenario") in titles}
    if problems and not explained & _DIVERGED:
        out.findings.append(_finding(rules.FINAL_DIFFERS, "; ".join(problems), title))
    temps = ckptdir.temp_files(final.listing)
    if temps:
        out.findings.append(_leftover(temps, "the finished relaunch", title))

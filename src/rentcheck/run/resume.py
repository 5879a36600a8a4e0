"""The resume gate: kill the identical command at an exact point, relaunch it, compare.

Three things run, side by side as far as the CPUs allow, each in its own scratch copy of the
project (``scratch.py``):

* the reference: the command, uninterrupted, to its end;
* the kill chain: killed (SIGKILL) half an interval after its first checkpoint, relaunched,
  killed again (SIGTERM) the same way, relaunched to the end: each relaunch is a resume;
* the save chain: killed (SIGKILL) in the middle of writing its second checkpoint, relaunched.

Relaunches run the byte-identical command line and environment; rentcheck adds no resume flag,
because loading the newest checkpoint on start-up is what is under test. With the step shim the
kill points are exact (the shim holds the process still and the supervisor kills its group);
without it they follow the log and the checkpoint directory, as closely as polling allows.

Cost: a ``python script.py`` command's chain runs fork from a warmed interpreter of their own
(``forking.py``) that imported what the cold reference imported first; then all three run side
by side, since the imports that dominate are paid once per chain, not once per launch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from rentcheck.model import Finding, Severity
from rentcheck.record import replace
from rentcheck.run import ckptdir, shimreport
from rentcheck.run.forking import ForkServer, Learned, fork_script
from rentcheck.run.logparse import strip_ansi
from rentcheck.run.process import ProcessResult, ShimEvents, Trigger, keep_log, supervise
from rentcheck.run.resume_judge import judge
from rentcheck.run.resume_outcome import ResumeOutcome
from rentcheck.run.rules import SHIM_UNAVAILABLE
from rentcheck.run.runs import RESUME_STRETCH, Chain, Interrupt, RunRecord
from rentcheck.run.scratch import (
    Scratch,
    launch_in,
    new_scratch,
    refill_scratch,
    remove_scratch,
    start_dir,
)
from rentcheck.run.settings import ResumeSettings

__all__ = ["ResumeOutcome", "run_reference", "run_resume"]


class _KillTrigger:
    """Decides when to signal an interrupted run: at the shim's pause, else from log and dir."""

    def __init__(
        self, plan: Interrupt, settings: ResumeSettings, ckpt_dir: str, tree: bool = False
    ) -> None:
        self.plan, self.settings, self.ckpt_dir = plan, settings, ckpt_dir
        self.tree = tree  # no checkpoint-dir: watch the whole tree the run starts in
        self.walked_at = 0.0
        self.walked: dict[str, int] = {}
        self.shim_active = False
        self.seen = 0  # shim events already looked at
        self.lines_seen = 0
        self.steps = 0  # step lines seen in the log
        self.first_checkpoint_at: int | None = None
        self.sizes: dict[str, int] | None = None
        self.baseline: dict[str, int] | None = None

    def __call__(self, events: ShimEvents, lines: Sequence[str]) -> int | None:
        for event in events.events[self.seen :]:
            if event.get("e") == "torch":
                self.shim_active = True
            if event.get("e") == "pause" and event.get("reason") == self.plan.kind:
                return self.plan.sig
        self.seen = len(events.events)
        if self.shim_active:
            return None  # the shim pauses at the exact point; polling would only race it
        return self._fallback(lines)

    def _fallback(self, lines: Sequence[str]) -> int | None:
        new = lines[self.lines_seen : len(lines)]
        self.lines_seen += len(new)
        patterns = self.settings.step_patterns
        self.steps += sum(1 for line in new if any(p.search(strip_ansi(line)) for p in patterns))
        listing = self._listing()
        if self.baseline is None:
            self.baseline = listing  # the project's own files (the run may start in its dir)
        listing = {n: size for n, size in listing.items() if self.baseline.get(n) != size}
        if self.first_checkpoint_at is None:
            if self.steps >= 1 and any(not ckptdir.is_temp_path(n) for n in listing):
                self.first_checkpoint_at = self.steps
                self.sizes = listing
            return None
        if self.plan.kind == "step":
            first = self.first_checkpoint_at
            return self.plan.sig if self.steps >= first + max(1, first // 2) else None
        previous, self.sizes = self.sizes or {}, listing
        # Growing: a temp file appeared, or a file got bigger between two polls. A checkpoint
        # that appeared complete under its final name was not caught mid-write.
        growing = [
            name
            for name, size in listing.items()
            if (name in previous and previous[name] != size)
            or (name not in previous and ckptdir.is_temp_path(name))
        ]
        return self.plan.sig if growing else None

    def _listing(self) -> dict[str, int]:
        if not self.tree:
            return _sizes(self.ckpt_dir)
        now = time.monotonic()
        if now - self.walked_at >= TREE_POLL_S:  # a walk per poll would compete with training
            # Checkpoint-like files only (numbered, or temp names): logs grow at every step.
            self.walked = {
                path: size
                for path, size in tree_sizes(self.ckpt_dir).items()
                if ckptdir.is_temp_path(path) or numbered_dir([path]) is not None
            }
            self.walked_at = now
        return self.walked


def _sizes(directory: str) -> dict[str, int]:
    try:
        with os.scandir(directory) as entries:
            return {e.name: e.stat(follow_symlinks=False).st_size for e in entries}
    except OSError:
        return {}


TREE_DEPTH = 3
TREE_POLL_S = 0.1


def tree_sizes(top: str, depth: int = TREE_DEPTH) -> dict[str, int]:
    """Relative path ('/'-separated) -> size of the files up to ``depth`` levels below."""
    found: dict[str, int] = {}
    for current, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(current, top)
        level = 0 if rel == os.curdir else rel.count(os.sep) + 1
        if level + 1 >= depth:
            dirnames[:] = []
        prefix = "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"
        for name in filenames:
            try:
                found[prefix + name] = os.lstat(os.path.join(current, name)).st_size
            except OSError:
                continue
    return found


def _initial(settings: ResumeSettings, scratch: Scratch) -> dict[str, int]:
    """The copy's tree before any launch (only needed to find an unconfigured checkpoint dir)."""
    return {} if settings.checkpoint_dir else tree_sizes(scratch.cwd)


def numbered_dir(new_files: Sequence[str]) -> str | None:
    """Where a run without the shim put its checkpoints: the directory holding the most
    numbered entries among the files it created (``checkpoints/ckpt-8.pt``, ``out/checkpoint-8/
    model.safetensors``), relative to where it started; None when it created none."""
    entries: dict[str, set[str]] = {}
    for path in new_files:
        parts = path.split("/")
        for index, part in enumerate(parts):
            if ckptdir.step_of(part) is not None and not ckptdir.is_temp_name(part):
                entries.setdefault("/".join(parts[:index]) or ".", set()).add(part)
                break
    return max(entries, key=lambda d: len(entries[d])) if entries else None


def _run_one(
    settings: ResumeSettings,
    scratch: Scratch,
    state_dir: str,
    label: str,
    plan: Interrupt | None,
    *,
    initial: dict[str, int],
    server: ForkServer | None = None,
    learned: Learned | None = None,
    stop_after: int | None = None,
    resumes_after: int = 0,
) -> RunRecord:
    """One launch in ``scratch``; ``initial`` is its tree before the first launch there.

    ``server``: fork the run from it; ``learned``: the reference reports its imports there;
    ``stop_after``: the shim ends the run after this many of its own optimizer steps (default
    ``steps``), whether or not the command has a steps flag; ``resumes_after``: the
    checkpoint step a relaunch should resume after (its progress line counts from there)."""
    shim_settings = dict(_SHIM_BASE)
    shim_settings[SHIM_STOP_AFTER] = str(stop_after or settings.steps)
    if plan is not None:
        shim_settings["RENTCHECK_SHIM_PAUSE"] = plan.kind
    if learned is not None:
        shim_settings["RENTCHECK_SHIM_MODULES"] = "1"
    launch = launch_in(
        settings, scratch, name=label, state_dir=state_dir, shim_settings=shim_settings
    )
    launch = replace(launch, stretch=RESUME_STRETCH)
    if server is not None and server.usable:
        launch = replace(launch, spawn=server.spawn)
    what = plan.describe() if plan else "to the end"
    how = ", forked from the chain's warmed interpreter" if launch.spawn else ""
    progress(f"resume: {label}: started ({what}{how})")
    configured = settings.checkpoint_dir
    # Polled without the shim: `checkpoint-dir`, else the tree the run starts in. Judged: that
    # dir, else where the shim saw checkpoints written, else where numbered files appeared.
    watched = os.path.join(scratch.cwd, configured) if configured else scratch.cwd
    trigger: Trigger | None = None
    if plan is not None:
        trigger = _KillTrigger(plan, settings, watched, tree=not configured)
    if learned is not None:
        trigger = _Reporter(learned, trigger)
    try:
        result = supervise(launch, trigger)
    finally:
        if learned is not None:
            learned.finish()
    shim = shimreport.summarize(result.events, injected=launch.shim)
    ending = f"{_ending(result, shim, resumes_after)} ({result.duration:.1f} s)"
    if result.sent_signal is not None:
        ending += ", relaunching..."
    progress(f"resume: {label}: {ending}", always=True)
    if configured:
        ckpt_dir = watched
    else:
        after = tree_sizes(scratch.cwd)
        found = numbered_dir([p for p, size in after.items() if initial.get(p) != size])
        default = os.path.normpath(os.path.join(scratch.cwd, found or DEFAULT_CHECKPOINT_DIR))
        ckpt_dir = _written_dir(shim, scratch.cwd, default)
    return RunRecord(
        label=label,
        result=result,
        shim=shim,
        listing=ckptdir.list_checkpoint_dir(ckpt_dir),
        ckpt_dir=ckpt_dir,
        interrupt=plan,
    )


DEFAULT_CHECKPOINT_DIR = "checkpoints"
SHIM_STOP_AFTER = "RENTCHECK_SHIM_STOP_AFTER"
LEARN_WAIT_S = 10.0  # the least a chain waits for the reference's imports before its first run
_SHIM_BASE = {"RENTCHECK_SHIM_LOSSES": "1", "RENTCHECK_SHIM_DIGEST": "1"}


class _Reporter:
    """The reference run's trigger: never signals; hands the imports it reported on."""

    def __init__(self, learned: Learned, inner: Trigger | None) -> None:
        self.learned, self.inner, self.seen = learned, inner, 0

    def __call__(self, events: ShimEvents, lines: Sequence[str]) -> int | None:
        self.learned.offer(events.events[self.seen :])
        self.seen = len(events.events)
        return self.inner(events, lines) if self.inner else None


def progress(text: str, *, always: bool = False) -> None:
    """Progress on stderr (stdout is the report): every launch on a terminal; off a terminal
    only the ``always`` lines (one per run as it ends), so a CI log shows the gate is alive."""
    if always or sys.stderr.isatty():
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _ending(result: ProcessResult, shim: shimreport.ShimSummary, resumes_after: int = 0) -> str:
    """How a launch ended, its steps numbered as everywhere: "after step k" is k optimizer
    steps done, counted from the run's start, as the verdict's "killed after step k" counts
    them. A relaunch's place is known only once it is judged (it may not have resumed): its
    own steps, and the step it reached if it resumed where it should."""
    steps = f"step {shim.steps}" if shim.active else "its log"
    if shim.active and resumes_after:
        steps = (
            f"{shim.steps} step{'s' if shim.steps != 1 else ''} of this launch (step "
            f"{resumes_after + shim.steps} if it resumed after checkpoint step {resumes_after})"
        )
    if result.sent_signal is not None:
        return f"{signal.Signals(result.sent_signal).name} sent after {steps}"
    if result.timed_out:
        cores = shimreport.busy(shim, result.cpu_at_limit, result.ended_at, result.started_at)
        if shimreport.still_stepping(shim.step_times, result.ended_at):
            why = "still stepping: too slow"
        elif cores is not None and cores >= shimreport.BUSY_FRACTION:
            why = "working between steps: too slow"
        else:
            why = "no step progress: hang"
        return f"timed out after {steps} ({why}; limit {result.limit_s:.0f} s)"
    if result.returncode == 0 and shim.stopped_after is not None:
        return f"stopped by rentcheck after {steps}"
    return f"exited with status {result.returncode} after {steps}"


def _allowed(finding: Finding) -> Finding:
    return replace(finding, severity=Severity.NOTE, message=f"{finding.message} [allowed]")


def _written_dir(shim: shimreport.ShimSummary, cwd: str, default: str) -> str:
    """Without ``checkpoint-dir``: the directory the run's checkpoints went to (the common
    parent of its checkpoint writes; above ``checkpoint-N/`` directories), else ``default``."""
    parents = {os.path.dirname(path) for _, path in shim.checkpoint_writes()}
    if not parents:
        return default
    common = os.path.commonpath(sorted(parents))
    if len(parents) == 1 and ckptdir.step_of(os.path.basename(common)) is not None:
        common = os.path.dirname(common)  # everything went into one `checkpoint-8/`
    inside = os.path.realpath(common).startswith(os.path.realpath(cwd) + os.sep)
    return common if inside else cwd


def run_reference(
    settings: ResumeSettings,
    *,
    workdir_parent: str | None = None,
    state_dir: str | None = None,
    learned: Learned | None = None,
) -> RunRecord:
    """The uninterrupted run (its working dir is removed; the record keeps what is needed).

    It always runs cold, as typed; it reports its imports (for the chains' fork servers)."""
    scratch = new_scratch(settings, "resume-reference", workdir_parent)
    own_state = state_dir is None
    state = state_dir or tempfile.mkdtemp(prefix="rentcheck-state-")
    try:
        return _run_one(
            settings,
            scratch,
            state,
            "reference",
            None,
            initial=_initial(settings, scratch),
            learned=learned or Learned(),
        )
    finally:
        remove_scratch(scratch)
        if own_state:
            shutil.rmtree(state, ignore_errors=True)


class ObservedEnd:
    """The step at which the project ended by itself (its epochs, its own flag) before
    ``steps``, once a run saw it: the reference, or a chain's first run. Kills are planned
    before it (the shim pauses at most one step before its stop)."""

    def __init__(self) -> None:
        self.steps: int | None = None

    def offer(self, record: RunRecord, stop: int) -> bool:
        """Whether ``record`` (a run from step 1, given ``stop``) ended by itself earlier."""
        ended = (
            record.shim.active
            and not record.interrupted
            and not record.result.timed_out
            and record.result.returncode == 0
            and record.shim.stopped_after is None
            and 0 < record.shim.steps < stop
        )
        if ended:
            self.steps = min(self.steps or record.shim.steps, record.shim.steps)
        return ended

    def stop(self, steps: int) -> int:
        return min(steps, self.steps) if self.steps else steps


def _stop_of(record: RunRecord) -> int:
    """The step count the shim was told to stop the run after."""
    return int(record.result.launch.shim_settings.get(SHIM_STOP_AFTER, "0") or 0)


def _replannable(record: RunRecord, plan: Interrupt, end: ObservedEnd) -> bool:
    """A first run that ended by itself before its kill between checkpoints, with a step
    between its first checkpoint and its end: run again with the kill planned before it."""
    written = [step for step, _ in record.shim.checkpoint_writes()]
    return (
        plan.kind == "step"
        and bool(written)
        and end.steps is not None
        and (min(written) < end.steps - 1)
    )


def _run_chain(
    settings: ResumeSettings,
    name: str,
    plans: tuple[Interrupt, ...],
    parent: str | None,
    state_dir: str,
    *,
    learned: Learned | None = None,
    end: ObservedEnd | None = None,
) -> Chain:
    """``learned``: fork the chain's runs from a server warmed with what the reference
    imported (None: every run is a new process); ``end``: where the project ends by itself,
    shared with the reference."""
    end = end or ObservedEnd()
    scratch = new_scratch(settings, f"resume-{name}", parent)
    chain = Chain(name=name, interrupts=plans, runs=[], workdir=os.path.dirname(scratch.root))
    initial = _initial(settings, scratch)
    server = None
    try:
        if learned is not None:
            template = launch_in(
                settings, scratch, name=f"{name}-server", state_dir=state_dir,
                shim_settings=_SHIM_BASE,
            )  # fmt: skip
            server = ForkServer.start(template)
            if server is not None:
                # The reference's first step comes after its imports; beyond about as long
                # again, it is preparing data: go on and preload before a later run.
                server.preload_learned(learned, max(LEARN_WAIT_S, 2 * server.warmup_s))

        done = 0  # global steps behind the next launch, if it resumes where it should

        def run(label: str, plan: Interrupt | None) -> RunRecord:
            if server is not None and learned is not None:
                server.preload_learned(learned, 0)
            # A relaunch that resumes at `done + 1` stops where the reference stops.
            stop = max(1, end.stop(settings.steps) - done)
            return _run_one(
                settings, scratch, state_dir, label, plan, initial=initial, server=server,
                stop_after=stop, resumes_after=done,
            )  # fmt: skip

        for index, plan in enumerate(plans):
            record = run(f"{name}{index + 1}", plan)
            if (
                index == 0
                and end.offer(record, _stop_of(record))
                and _replannable(record, plan, end)
            ):
                progress(
                    f"resume: {name}1: ended by itself after step {record.shim.steps}, before "
                    "its kill: starting over with the kill planned before its last step "
                    f"({end.steps})",
                    always=True,
                )
                refill_scratch(settings, scratch)
                for stale in (record.result.launch.report_path, record.result.launch.release_path):
                    with contextlib.suppress(OSError):
                        os.remove(stale)  # the new run reports afresh under the same name
                record = run(f"{name}{index + 1}", plan)
            chain.runs.append(record)
            if not record.interrupted:
                return chain  # it ended on its own: nothing to relaunch
            done += max((step for step, _ in record.shim.checkpoint_writes()), default=0)
        chain.runs.append(run(f"{name}{len(plans) + 1}", None))
    except BaseException:  # e.g. the command cannot start: no verdict, no directory to keep
        remove_scratch(scratch)
        raise
    finally:
        if server is not None:
            server.close()
    return chain


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def plan_lanes(lengths: Sequence[int], cpus: int) -> list[list[int]]:
    """Job indices per lane: at most ``cpus`` lanes, longest job first into the least loaded.

    Torch start-up is CPU-bound: on two cores the reference fits behind the shorter chain
    instead of slowing both chains down.
    """
    lanes: list[list[int]] = [[] for _ in range(max(1, min(cpus, len(lengths))))]
    loads = [0] * len(lanes)
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        lane = loads.index(min(loads))
        lanes[lane].append(index)
        loads[lane] += lengths[index]
    return lanes


def _run_in_lanes(jobs: Sequence[tuple[int, Callable[[], Any]]], cpus: int) -> list[Any]:
    """Run (length in runs, function) jobs lane by lane in parallel; results in job order."""
    lanes = plan_lanes([length for length, _ in jobs], cpus)
    results: list[Any] = [None] * len(jobs)

    def run_lane(indices: list[int]) -> None:
        for index in indices:
            results[index] = jobs[index][1]()

    with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
        for future in [pool.submit(run_lane, lane) for lane in lanes]:
            future.result()
    return results


def _learned(settings: ResumeSettings, reference: RunRecord | None) -> Learned | None:
    """Where the reference's imports arrive, when the chains fork (None: they do not)."""
    if settings.fork_server == "off" or settings.shim == "off":
        return None
    here = os.path.join(settings.root, start_dir(settings.root, settings.cwd))
    if fork_script(settings.argv_in(settings.root), here) is None:
        return None  # not `python script.py`: every run is a new process, lanes as the CPUs
    learned = Learned()
    if reference is not None:
        learned.offer(reference.result.events)
        learned.finish()
    return learned


def run_resume(
    settings: ResumeSettings,
    *,
    reference: RunRecord | None = None,
    workdir_parent: str | None = None,
    keep_workdirs: bool | None = None,
) -> ResumeOutcome:
    """Run the gate. ``reference`` reuses an uninterrupted run of the same command (tests)."""
    plans: list[tuple[str, tuple[Interrupt, ...]]] = []
    if settings.signals:
        plans.append(("kill", tuple(Interrupt("step", sig) for sig in settings.signals)))
    if settings.kill_during_save:
        plans.append(("save", (Interrupt("save", signal.SIGKILL),)))
    state_dir = tempfile.mkdtemp(prefix="rentcheck-state-")
    learned = _learned(settings, reference)
    end = ObservedEnd()
    if reference is not None:
        end.offer(reference, settings.steps)
    run_chain = partial(_run_chain, settings, parent=workdir_parent, state_dir=state_dir, end=end)
    jobs: list[tuple[int, Callable[[], Any]]] = [
        (len(p) + 1, partial(run_chain, name, p, learned=learned)) for name, p in plans
    ]
    if reference is None:
        cold = partial(run_reference, settings, workdir_parent=workdir_parent, state_dir=state_dir)

        def reference_run() -> RunRecord:
            record = cold(learned=learned)
            end.offer(record, settings.steps)  # the chains' later launches plan before it
            return record

        jobs.append((1, reference_run))
    started = time.monotonic()
    try:
        # Forked chains pay their imports once: the three jobs go side by side.
        results = _run_in_lanes(jobs, len(jobs) if learned else _cpus())
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    chains: list[Chain] = results[: len(plans)]
    ref = results[len(plans)] if reference is None else reference
    duration = time.monotonic() - started
    judgement = judge(settings, ref, chains)
    findings = [_allowed(f) if f.code in settings.allow else f for f in judgement.findings]
    outcome = ResumeOutcome(settings, ref, chains, judgement, duration, findings)
    if settings.shim != "off" and not ref.shim.active:
        severity = Severity.WARNING if settings.shim == "on" else Severity.NOTE
        message = f"step shim {ref.shim.status}: {ref.shim.reason}"
        outcome.findings.append(SHIM_UNAVAILABLE.finding(message, severity=severity))
    keep = not outcome.passed if keep_workdirs is None else keep_workdirs
    for chain in chains:
        if keep:
            outcome.workdirs.append(chain.workdir)
            # Every run's log beside the outputs it left; the reference's in each folder.
            for run in [ref, *chain.runs]:
                keep_log(run.result, os.path.join(chain.workdir, f"{run.label}.log"))
        else:
            shutil.rmtree(chain.workdir, ignore_errors=True)
    return outcome

"""What the step shim saw in one run, from its JSON lines (see ``shim/sitecustomize.py``)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

__all__ = ["ShimSummary", "busy", "main_pid", "pace", "still_stepping", "summarize"]

ACTIVE = "active"
NO_TORCH = "no-torch"
UNAVAILABLE = "unavailable"
OFF = "off"

_REASONS = {
    ACTIVE: "counted optimizer steps: torch.optim step hooks, and parameters changed between "
    "two backward passes",
    NO_TORCH: "loaded, but no process that loaded it imported torch (a `python -I`/`-S`/`-E` "
    "child, or a program without torch.optim)",
    UNAVAILABLE: "no process loaded it (`python -I`/`-S`/`-E`, a launcher that replaces "
    "PYTHONPATH or sitecustomize, or not Python); judged by exit code and log only",
    OFF: "disabled by `shim = off`; judged by exit code and log only",
}


@dataclass(frozen=True)
class ShimSummary:
    status: str
    torch_version: str | None = None
    steps: int = 0  # optimizer steps of the main training process
    losses: tuple[tuple[float, ...], ...] = ()  # per step: the scalars passed to backward()
    stopped_after: int | None = None  # the shim ended the run after this many steps
    nonfinite: Mapping[str, Any] | None = None
    saves: tuple[Mapping[str, Any], ...] = ()
    publishes: tuple[Mapping[str, Any], ...] = ()  # renames after a save: checkpoints published
    pause: Mapping[str, Any] | None = None
    digest: str | None = None
    errors: tuple[str, ...] = ()
    # Every checked step left every parameter as it was (no gradient reached the optimizer,
    # or a zero learning rate): the run stepped but did not train.
    idle: bool = False
    # time.monotonic() of each optimizer step of the main process (the clock every process of
    # the machine shares): a run still stepping at its time limit is slow, not hung.
    step_times: tuple[float, ...] = ()
    step_cpu: float | None = None  # the main process's CPU seconds at its last step
    main_pid: int | None = None

    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    @property
    def reason(self) -> str:
        return _REASONS[self.status]

    @property
    def cut_file(self) -> str | None:
        """The file the run was held (and killed) in the middle of writing, if it was."""
        pause = self.pause
        if pause and pause.get("dest"):  # a pause between steps names no file
            return str(pause["dest"])
        return None

    def checkpoint_writes(self) -> list[tuple[int, str]]:
        """(step, path) of each write that left a complete file or directory under a final
        name: a save straight onto it or a rename onto it; steps count this process's steps."""
        from rentcheck.run.ckptdir import is_temp_path

        writes = [
            (int(e.get("step", 0)), str(e["dest"]), int(e.get("_i", 0)))
            for e in sorted((*self.saves, *self.publishes), key=lambda e: int(e.get("_i", 0)))
            if e.get("dest") and e.get("ok", True) and not is_temp_path(str(e["dest"]))
        ]
        cut = self.cut_file
        if cut is None:
            return [(step, path) for step, path, _ in writes]
        pause = self.pause or {}
        # Without positions (a summary built by hand) the pause is taken as the last event.
        cut_step, cut_at = int(pause.get("step", -1)), int(pause.get("_i", 1 << 62))
        # Up to the pause, the cut file is not complete; nor is anything else written beside
        # it for that step (one checkpoint directory), and an older copy under the same name
        # was overwritten. What a released run wrote after the pause is whole.
        return [
            (step, path)
            for step, path, at in writes
            if at > cut_at
            or not (
                path == cut or (step == cut_step and os.path.dirname(path) == os.path.dirname(cut))
            )
        ]

    @property
    def failed_saves(self) -> list[Mapping[str, Any]]:
        return [s for s in self.saves if not s.get("ok")]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "torch_version": self.torch_version,
            "optimizer_steps": self.steps,
            "stopped_after": self.stopped_after,
            "steps_changed_no_parameter": self.idle,
            "nonfinite": _public(self.nonfinite) if self.nonfinite else None,
            "failed_saves": [_public(s) for s in self.failed_saves],
            "weights_sha256": self.digest,
            "errors": list(self.errors),
        }


def _public(event: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "_i"}


def main_pid(events: Sequence[Mapping[str, Any]]) -> int | None:
    """The training process: most optimizer steps, else the first one that imported torch."""
    steps = Counter(e.get("pid") for e in events if e.get("e") == "step")
    if steps:
        pid = steps.most_common(1)[0][0]
        return int(pid) if pid is not None else None
    for event in events:
        if event.get("e") == "torch":
            return int(event["pid"])
    return None


def summarize(events: Sequence[Mapping[str, Any]], injected: bool) -> ShimSummary:
    if not injected:
        return ShimSummary(status=OFF)
    if not any(e.get("e") == "start" for e in events):
        return ShimSummary(status=UNAVAILABLE)
    pid = main_pid(events)
    torch_event = next((e for e in events if e.get("e") == "torch"), None)
    if pid is None or torch_event is None:
        return ShimSummary(status=NO_TORCH)
    # Positions in the report keep the order of saves, publishes and the pause.
    mine = [{**e, "_i": i} for i, e in enumerate(events) if e.get("pid") == pid]
    step_events = [e for e in mine if e.get("e") == "step"]

    def first(kind: str) -> Mapping[str, Any] | None:
        return next((e for e in mine if e.get("e") == kind), None)

    stop = first("stop")
    exit_event = first("exit")
    return ShimSummary(
        status=ACTIVE,
        torch_version=str(torch_event.get("version")),
        steps=max((int(e.get("n", 0)) for e in step_events), default=0),
        losses=tuple(tuple(float(v) for v in e.get("loss") or ()) for e in step_events),
        stopped_after=int(stop["steps"]) if stop else None,
        nonfinite=first("nonfinite"),
        saves=tuple(e for e in mine if e.get("e") == "save"),
        publishes=tuple(e for e in mine if e.get("e") == "publish"),
        pause=first("pause"),
        digest=str(exit_event["digest"]) if exit_event and exit_event.get("digest") else None,
        errors=tuple(str(e.get("error")) for e in events if e.get("e") == "shim-error"),
        idle=bool(step_events) and all(e.get("moved") is False for e in step_events[:3]),
        step_times=tuple(float(e["t"]) for e in step_events if isinstance(e.get("t"), float)),
        step_cpu=next(
            (float(e["c"]) for e in reversed(step_events) if isinstance(e.get("c"), float)), None
        ),
        main_pid=pid,
    )


STALL_FACTOR = 3.0  # no step for this many times the longest gap between two steps: stalled
STALL_MIN_S = 2.0  # ... and never less: an evaluation or a save between two fast steps


# Cores used since the last step by a run that works (an eval, a sample) rather than waits: a
# wait uses next to none; a run sharing 2 loaded cores with others gets 0.3-0.4 (minGPT's
# chargpt sampling at 0.39 under load 9), so the line is well below one core.
BUSY_FRACTION = 0.1


def busy(shim: ShimSummary, cpu_at: float | None, at: float, started: float) -> float | None:
    """The main process's CPU use (cores) from its last step (else from its start) until
    ``at``, when it had used ``cpu_at`` CPU seconds; None when unknown."""
    if cpu_at is None:
        return None
    since, cpu0 = (shim.step_times[-1], shim.step_cpu) if shim.step_times else (started, 0.0)
    if cpu0 is None or at - since <= 0:
        return None
    return max(0.0, cpu_at - cpu0) / (at - since)


def pace(step_times: Sequence[float]) -> float | None:
    """Seconds per optimizer step, from the steps seen (None: fewer than two)."""
    if len(step_times) < 2:
        return None
    return (step_times[-1] - step_times[0]) / (len(step_times) - 1)


def still_stepping(step_times: Sequence[float], at: float) -> bool:
    """Whether a run whose steps came at ``step_times`` was still advancing at ``at`` (a
    monotonic time): its last step is no longer ago than a few of its longest gaps. A hang is
    no step for a long stretch; a run with fewer than two steps has shown no pace."""
    if len(step_times) < 2:
        return False
    gap = max(b - a for a, b in pairwise(step_times))
    return at - step_times[-1] <= max(STALL_FACTOR * gap, STALL_MIN_S)

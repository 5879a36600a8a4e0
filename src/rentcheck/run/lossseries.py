"""Per-step losses of a run, and their comparison with the uninterrupted reference run.

Losses come from the log (a step pattern with step numbers is best) or, when the log has none,
from the step shim's records. Without step numbers, a run's position in the reference is
inferred from where its losses fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rentcheck.run.logparse import epoch_size, parse_steps
from rentcheck.run.runs import RunRecord
from rentcheck.run.settings import ResumeSettings

__all__ = ["Comparison", "LossComparer", "Series", "same_value"]


@dataclass
class Series:
    steps: list[int] | None  # None: the log has no step numbers, positions are inferred
    values: list[str]


@dataclass
class Comparison:
    first_step: int | None
    last_step: int | None
    compared: int
    first_mismatch: int | None
    inferred: bool
    values: tuple[str, str] = ("", "")  # (reference, relaunch) at the first mismatch


def same_value(a: str, b: str, rtol: float, atol: float) -> bool:
    """Equal within the tolerances; comma-separated values (the shim's per-step list of
    backward() scalars) compare item by item, and NaN equals NaN."""
    if a == b:
        return True
    left, right = a.split(","), b.split(",")
    if len(left) != len(right):
        return False
    for x, y in zip(left, right, strict=True):
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            if x.strip() != y.strip():
                return False
            continue
        if math.isnan(fx) and math.isnan(fy):
            continue
        if not math.isclose(fx, fy, rel_tol=rtol, abs_tol=atol):
            return False
    return True


class LossComparer:
    """Reads every run's losses the way the reference's could be read, and compares them."""

    def __init__(self, settings: ResumeSettings, reference: RunRecord) -> None:
        self.settings = settings
        self.pattern: int | None = None
        self.source: str | None = None
        self.epoch_size = 0
        index, records = parse_steps(reference.result.lines, settings.step_patterns)
        if index is not None:
            self.epoch_size = epoch_size(reference.result.lines, settings.step_patterns[index])
        if index is not None and records[0].step is not None:
            self.source, self.pattern = "log", index
        elif reference.shim.active and reference.shim.steps > 0:
            self.source = "shim"
        elif index is not None:
            self.source, self.pattern = "log", index
        self.reference = self.series(reference) if self.source else Series(None, [])

    def series(self, run: RunRecord) -> Series:
        if self.source == "shim":
            return Series(None, [",".join(repr(v) for v in step) for step in run.shim.losses])
        _, records = parse_steps(
            run.result.lines, self.settings.step_patterns, self.pattern, self.epoch_size
        )
        steps = None if not records or records[0].step is None else [r.step or 0 for r in records]
        return Series(steps, [r.loss or "" for r in records])

    def same(self, a: str, b: str) -> bool:
        settings = self.settings
        if settings.mode == "continues":
            return same_value(a, b, max(settings.rtol, settings.band), settings.atol)
        return same_value(a, b, settings.rtol, settings.atol)

    def compare(self, run: RunRecord, expected_start: int) -> Comparison:
        series = self.series(run)
        if not series.values:
            return Comparison(None, None, 0, None, False)
        ref = self.reference
        inferred = series.steps is None or ref.steps is None
        if inferred and self._ran_to_the_end(run):
            # It trained to the same final step: it started that many steps before the end
            # (a relaunch that ignored its checkpoint took all of them again).
            start = len(ref.values) - len(series.values) + 1
            steps = list(range(start, start + len(series.values)))
        elif inferred:
            start = self._locate(series.values, expected_start)
            steps = list(range(start, start + len(series.values)))
        else:
            steps = list(series.steps or [])
        ref_by_step = (
            dict(zip(ref.steps, ref.values, strict=True))
            if ref.steps
            else dict(enumerate(ref.values, 1))
        )
        compared, mismatch, values = 0, None, ("", "")
        for step, value in zip(steps, series.values, strict=True):
            if step in ref_by_step:
                compared += 1
                if mismatch is None and not self.same(ref_by_step[step], value):
                    mismatch, values = step, (ref_by_step[step], value)
        last = steps[len(series.values) - 1]
        return Comparison(steps[0], last, compared, mismatch, inferred, values)

    def _ran_to_the_end(self, run: RunRecord) -> bool:
        return (
            self.source == "shim"
            and self.settings.mode == "continues"
            and not run.interrupted
            and run.result.returncode == 0
            # Stopped by the shim at `steps` minus its expected start: no evidence of where it
            # started (a relaunch that ignored its checkpoint stops early, not at the end).
            and run.shim.stopped_after is None
        )

    def _locate(self, values: list[str], expected: int) -> int:
        """Without step numbers: where the run's losses sit in the reference's (1-based)."""
        ref = self.reference.values
        fits = [
            start
            for start in range(1, len(ref) - len(values) + 2)
            if all(self.same(ref[start - 1 + i], v) for i, v in enumerate(values))
        ]
        if expected in fits or not fits:
            return expected
        return fits[0]

    @property
    def final_step(self) -> int | None:
        ref = self.reference
        if ref.steps:
            return ref.steps[-1]
        return len(ref.values) or None

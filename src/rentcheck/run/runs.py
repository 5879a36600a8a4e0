"""What the resume gate ran: planned interruptions, finished runs, chains of relaunches."""

from __future__ import annotations

from dataclasses import dataclass

from rentcheck.run import ckptdir
from rentcheck.run.classify import classify_failure
from rentcheck.run.process import ProcessResult
from rentcheck.run.shimreport import ShimSummary

__all__ = ["Chain", "Interrupt", "RunRecord"]


@dataclass(frozen=True)
class Interrupt:
    kind: str  # "step": between checkpoints; "save": during a checkpoint write
    sig: int

    def describe(self) -> str:
        import signal

        name = signal.Signals(self.sig).name
        return (
            f"{name} between checkpoints"
            if self.kind == "step"
            else f"{name} during a checkpoint write"
        )


@dataclass
class RunRecord:
    label: str
    result: ProcessResult
    shim: ShimSummary
    listing: ckptdir.Listing  # the checkpoint dir once the run's processes were gone
    ckpt_dir: str
    interrupt: Interrupt | None = None

    @property
    def interrupted(self) -> bool:
        return self.result.sent_signal is not None

    @property
    def failed_on_its_own(self) -> bool:
        return self.result.timed_out or (not self.interrupted and self.result.returncode != 0)

    def failure_text(self) -> str:
        failure = classify_failure(
            self.result.returncode,
            self.result.timed_out,
            self.result.lines,
            self.shim,
            self.shim.steps,
        )
        if failure is None:
            return f"exit status {self.result.returncode}"
        return f"{failure.kind}: {failure.evidence}" + (
            f" ({failure.detail})" if failure.detail else ""
        )


@dataclass
class Chain:
    name: str
    interrupts: tuple[Interrupt, ...]
    runs: list[RunRecord]
    workdir: str

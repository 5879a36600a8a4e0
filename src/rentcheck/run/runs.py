"""What the resume gate ran: planned interruptions, finished runs, chains of relaunches."""

from __future__ import annotations

from dataclasses import dataclass

from rentcheck.run import ckptdir
from rentcheck.run.classify import Failure, classify_failure
from rentcheck.run.process import ProcessResult
from rentcheck.run.shimreport import ShimSummary

__all__ = ["RESUME_STRETCH", "Chain", "Interrupt", "RunRecord"]

# A resume launch still stepping at `timeout` may run as long as its own measured pace needs
# to reach its stop (one working between two steps: another `timeout` at a time), up to this
# many times `timeout` (three runs share the CPUs side by side).
RESUME_STRETCH = 3.0


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

    def failure(self) -> Failure | None:
        """Why the run failed on its own (None: it did not); "too-slow" rather than "hang"
        when it timed out still stepping toward the stop it was given."""
        stop = self.result.launch.shim_settings.get("RENTCHECK_SHIM_STOP_AFTER", "")
        return classify_failure(
            self.result.returncode,
            self.result.timed_out,
            self.result.lines,
            self.shim,
            self.shim.steps,
            ended_at=self.result.ended_at,
            cpu_at_limit=self.result.cpu_at_limit,
            started=self.result.started_at,
            steps=int(stop) if stop.isdigit() else 0,
            section="resume",
        )

    def failure_text(self) -> str:
        failure = self.failure()
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

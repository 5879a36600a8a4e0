"""The smoke and resume gates' results, built once for the CLI and the pytest items: the
findings, what the run saw (optimizer steps, scenarios judged) and the headline worded from
the one verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rentcheck.gates.judge import GateResult
    from rentcheck.run.resume_outcome import ResumeOutcome
    from rentcheck.run.smoke import SmokeOutcome

__all__ = ["resume_result", "smoke_result"]


def smoke_result(outcome: SmokeOutcome) -> GateResult:
    return _result("smoke", outcome, {"optimizer_steps": outcome.observed_steps})


def resume_result(outcome: ResumeOutcome) -> GateResult:
    return _result("resume", outcome, {"scenarios": outcome.scenarios_judged})


def _result(gate: str, outcome: SmokeOutcome | ResumeOutcome, seen: dict[str, int]) -> GateResult:
    from rentcheck.gates.judge import GateResult

    return GateResult(
        gate,
        list(outcome.findings),
        extras={gate: outcome.to_dict()},
        seen=seen,
        say=outcome.verdict_lines,
    )

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
    from rentcheck.gates.judge import GateResult

    extras = outcome.to_dict()
    return GateResult(
        "smoke",
        list(outcome.findings),
        extras={"smoke": extras},
        seen={"optimizer_steps": outcome.observed_steps},
        say=outcome.verdict_lines,
    )


def resume_result(outcome: ResumeOutcome) -> GateResult:
    from rentcheck.gates.judge import GateResult

    extras = outcome.to_dict()
    return GateResult(
        "resume",
        list(outcome.findings),
        extras={"resume": extras},
        seen={"scenarios": outcome.scenarios_judged},
        say=outcome.verdict_lines,
    )

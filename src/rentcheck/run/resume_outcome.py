"""What ``rentcheck resume`` reports: the verdict lines and the JSON of one gate run."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import Any

from rentcheck.model import Finding, Severity
from rentcheck.run.process import redacted, reproduce_line
from rentcheck.run.resume_judge import Judgement
from rentcheck.run.runs import Chain, RunRecord
from rentcheck.run.settings import ResumeSettings

__all__ = ["ResumeOutcome"]


@dataclass
class ResumeOutcome:
    settings: ResumeSettings
    reference: RunRecord
    chains: list[Chain]
    judgement: Judgement
    duration: float
    findings: list[Finding] = field(default_factory=list)
    workdirs: list[str] = field(default_factory=list)  # kept for inspection when it failed

    @property
    def passed(self) -> bool:
        return not any(f.severity >= Severity.WARNING for f in self.findings)

    @property
    def ratio(self) -> float:
        return (
            self.duration / self.reference.result.duration
            if self.reference.result.duration
            else 0.0
        )

    @property
    def scenarios_judged(self) -> int:
        """Kill scenarios that ran and were judged (not skipped or reported as not run)."""
        return sum(1 for s in self.judgement.scenarios if s.get("ran"))

    def verdict_lines(self, passed: bool | None = None) -> list[str]:
        """The resume block, worded from ``passed`` (the gate's verdict; this outcome's own
        findings when None, for a test that runs the engine directly)."""
        passed = self.passed if passed is None else passed
        ref = self.reference
        judged = self.scenarios_judged
        planned = sum(len(chain.interrupts) for chain in self.chains)
        ratio = f" ({self.ratio:.1f}x one uninterrupted run)" if judged else ""
        source = {"log": "its log", "shim": "the step shim"}.get(self.judgement.source or "")
        losses = f"step losses from {source}" if source else "no step losses"
        lines = [
            f"resume: {'PASSED' if passed else 'FAILED'}: {judged} of {planned} kill "
            f"scenario(s) judged in {self.duration:.1f} s{ratio}",
            f"  command: {' '.join(self.settings.argv)}",
            f"  python: {self.settings.interpreter.path} ({self.settings.interpreter.source})",
            f"  reference: {_ref_ending(ref)} in {ref.result.duration:.1f} s; {losses}; "
            f"shim {ref.shim.status}",
        ]
        lines += [f"  {_describe(s)}" for s in self.judgement.scenarios]
        runs = [r for c in self.chains for r in c.runs]
        forked = sum(r.result.forked for r in runs)
        if forked:
            lines.append(
                f"  {forked} of {len(runs)} interrupted and relaunched runs forked from a warmed "
                "interpreter of their chain (`fork-server: off` starts each anew)"
            )
        if not passed:
            lines.append(f"  reproduce: {reproduce_line(ref.result.launch)}")
            lines += [f"  outputs and run logs kept in {w}" for w in self.workdirs]
        return lines

    def to_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "passed": self.passed,
            "duration_s": round(self.duration, 3),
            "reference_duration_s": round(ref.result.duration, 3),
            "ratio_to_reference": round(self.ratio, 3),
            "command": list(self.settings.argv),
            "env": redacted(ref.result.launch.env),
            "checkpoint_dir": self.settings.checkpoint_dir,
            "loss_source": self.judgement.source,
            "shim": ref.shim.to_dict(),
            "scenarios": self.judgement.scenarios,
            "scenarios_judged": self.scenarios_judged,
            "runs": [_run_dict(r) for r in [ref, *(r for c in self.chains for r in c.runs)]],
            "reproduce": reproduce_line(ref.result.launch),
            "workdirs_kept": self.workdirs,
        }


def _run_dict(run: RunRecord) -> dict[str, Any]:
    return {
        "label": run.label,
        "exit_status": run.result.returncode,
        "signal_sent": signal.Signals(run.result.sent_signal).name
        if run.result.sent_signal
        else None,
        "timed_out": run.result.timed_out,
        "duration_s": round(run.result.duration, 3),
        "started": "forked" if run.result.forked else "new process",
        "optimizer_steps": run.shim.steps,
        "checkpoint_dir": run.listing.to_dict(),
        "log_tail": run.result.lines[-10:],
    }


def _ref_ending(ref: RunRecord) -> str:
    if ref.result.returncode == 0 and ref.shim.stopped_after is not None:
        return f"stopped by rentcheck after step {ref.shim.stopped_after}"
    return (
        f"exit {ref.result.returncode} after step {ref.shim.steps}"
        if ref.shim.active
        else (f"exit {ref.result.returncode}")
    )


def _describe(s: dict[str, Any]) -> str:
    if not s.get("ran"):
        if s.get("why") == "kill-after-end":
            return f"{s['scenario']}: not run (the kill would land after the run's last step)"
        return f"{s['scenario']}: not run"
    text = f"{s['scenario']}: killed after step {s.get('killed_after_step')}"
    if s.get("cut_file"):
        text += f" while writing {os.path.basename(str(s['cut_file']))}"
    if s.get("relaunch_failed"):
        return text + "; the relaunch FAILED"
    first, durable = s.get("relaunch_first_step"), s.get("durable_checkpoint_step")
    text += f" -> relaunch continued at step {first} (newest complete checkpoint: {durable})"
    if s.get("compared_steps") is not None:
        mismatch = s.get("first_mismatch")
        text += f"; {s['compared_steps']} steps compared, " + (
            "all equal" if mismatch is None else f"first difference at step {mismatch}"
        )
    if s.get("final_weights_compared"):
        text += "; final weights " + ("equal" if s.get("final_weights_equal") else "DIFFER")
    return text

"""The smoke gate: run the real entrypoint on CPU for a few optimizer steps, classify failures.

One supervised run in a scratch copy of the project (``scratch.py``), with the CPU/tracker
env block and (shim
``auto``/``on``) the step shim that stops it cleanly after ``steps`` optimizer steps.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.model import Finding, Severity
from rentcheck.run import shimreport
from rentcheck.run.classify import Failure, classify_failure
from rentcheck.run.logparse import Traceback, last_traceback, parse_steps
from rentcheck.run.process import ProcessResult, keep_log, redacted, reproduce_line, supervise
from rentcheck.run.rules import SHIM_UNAVAILABLE, SMOKE_CLASSES
from rentcheck.run.sandbox import changed_paths, snapshot_tree
from rentcheck.run.scratch import launch_in, new_scratch, remove_scratch
from rentcheck.run.settings import SmokeSettings

__all__ = ["SmokeOutcome", "run_smoke"]

LOG_TAIL = 40
LABELS = {
    "import": "import error",
    "config": "config error",
    "data": "data pipeline error",
    "shape-dtype": "shape/dtype error",
    "hard-coded-cuda": "hard-coded CUDA",
    "needs-gpu": "needs a GPU-only dependency",
    "non-finite": "NaN/Inf",
    "hang": "hang: timed out",
    "too-slow": "too slow for the time limit",
    "checkpoint-save": "checkpoint save failed",
    "outside-sandbox": "wrote outside its sandbox",
    "needs-network": "needs network or an uncached download",
    "crash": "crashed",
    "no-steps": "no optimizer step",
}


@dataclass
class SmokeOutcome:
    settings: SmokeSettings
    result: ProcessResult
    shim: shimreport.ShimSummary
    failure: Failure | None
    outside: list[str]
    losses: dict[int, str]  # step -> loss text, from the log
    findings: list[Finding] = field(default_factory=list)
    workdir: str | None = None  # kept for inspection when the smoke failed

    @property
    def observed_steps(self) -> int:
        """Optimizer steps that trained: 0 when the shim saw steps change no parameter."""
        if self.shim.idle:
            return 0
        return max(self.shim.steps, len(self.losses))

    @property
    def passed(self) -> bool:
        return not any(f.severity >= Severity.WARNING for f in self.findings)

    @property
    def ended_by(self) -> str:
        r = self.result
        if r.timed_out:
            return f"timed out after {self.settings.timeout:g} s and was killed by rentcheck"
        if self.shim.nonfinite:
            step = self.shim.nonfinite.get("step")
            return f"stopped by rentcheck at non-finite parameters after step {step}"
        if r.returncode == 0 and self.shim.stopped_after is not None:
            return f"stopped by rentcheck after {self.shim.stopped_after} optimizer steps"
        if r.returncode == 0:
            return "exited on its own (exit 0)"
        if r.signal_name:
            return f"was killed by {r.signal_name}"
        return f"exited with status {r.returncode}"

    def reproduce(self) -> str:
        return reproduce_line(self.result.launch)

    def verdict_lines(self, passed: bool | None = None) -> list[str]:
        """The smoke block, worded from ``passed`` (the gate's verdict; this outcome's own
        findings when None, for a test that runs the engine directly)."""
        passed = self.passed if passed is None else passed
        head = "PASSED" if passed else "FAILED"
        steps = f"{self.observed_steps} optimizer step{'s' if self.observed_steps != 1 else ''}"
        ended = self.ended_by
        after = "" if "optimizer steps" in ended else f" after {steps}"
        lines = [
            f"smoke: {head}: the run {ended}{after} in {self.result.duration:.1f} s",
            f"  command: {' '.join(self.settings.argv)}",
            f"  python: {self.settings.interpreter.path} ({self.settings.interpreter.source})",
            f"  shim: {self.shim.status} ({self.shim.reason})",
        ]
        if self.failure is not None:
            detail = f" ({self.failure.detail})" if self.failure.detail else ""
            lines.append(f"  class: {self.failure.kind}: {self.failure.evidence}{detail}")
        if not passed:
            lines.append(f"  reproduce: {self.reproduce()}")
            if self.workdir:
                lines.append(f"  outputs and smoke.log kept in {self.workdir}")
            lines.append(f"  last {LOG_TAIL} log lines:")
            lines += [f"    | {line}" for line in self.result.lines[-LOG_TAIL:]]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "ended_by": self.ended_by,
            "class": self.failure.kind if self.failure else None,
            "evidence": self.failure.evidence if self.failure else None,
            "optimizer_steps": self.observed_steps,
            "exit_status": self.result.returncode,
            "timed_out": self.result.timed_out,
            "duration_s": round(self.result.duration, 3),
            "command": list(self.settings.argv),
            "env": redacted(self.result.launch.env),
            "reproduce": self.reproduce(),
            "workdir_kept": self.workdir,
            "shim": self.shim.to_dict(),
            "wrote_outside": self.outside,
            "log_tail": self.result.lines[-LOG_TAIL:],
            "losses": self.loss_points(),  # [step, loss] for the report's curve
        }

    def loss_points(self) -> list[list[float]]:
        """The logged losses as ``[step, loss]`` (finite numbers only, at most 400)."""
        points = []
        for step, text in sorted(self.losses.items()):
            try:
                loss = float(text)
            except ValueError:
                continue
            if math.isfinite(loss):
                points.append([step, loss])
        return points[:: max(1, -(-len(points) // 400))]  # resume_judge.MAX_POINTS too


def _location(tb: Traceback | None, roots: Sequence[str]) -> tuple[str | None, int | None]:
    """The innermost traceback frame inside the project (the run's copy of it, or the
    original), as (path relative to the project, line)."""
    if tb is None:
        return None, None
    real_roots = [os.path.realpath(root) for root in roots]
    for path, line, _ in reversed(tb.frames):
        full = os.path.realpath(os.path.abspath(path))
        for root in real_roots:
            if full.startswith(root + os.sep):
                return os.path.relpath(full, root).replace(os.sep, "/"), line
    return None, None


_QUOTED_PATH = re.compile(r"""['"]([^'"\s]+)['"]""")


def _link_hint(failure: Failure, settings: SmokeSettings, roots: Sequence[str]) -> str:
    """A path the run missed that the project has, but the scratch copy lacks (git ignores
    it): the fix is `link`, not a download."""
    if failure.kind not in ("config", "data", "needs-network", "crash"):
        return ""
    for text in _QUOTED_PATH.findall(failure.evidence):
        rel = text
        for root in roots:
            if os.path.isabs(text) and text.startswith(root.rstrip(os.sep) + os.sep):
                rel = os.path.relpath(text, root)
        top = os.path.normpath(rel).split(os.sep)[0]
        if top in ("", os.curdir, os.pardir) or os.path.isabs(rel) or top in settings.links:
            continue
        if os.path.exists(os.path.join(settings.root, top)) and _ignored(settings.root, top):
            return (
                f"; {top!r} is in the project but not in the scratch copy (git ignores it): "
                f'add `link: ["{top}"]` to the smoke section'
            )
    return ""


def _ignored(root: str, path: str) -> bool:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", root, "check-ignore", "-q", path],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _findings(outcome: SmokeOutcome) -> list[Finding]:
    settings, failure = outcome.settings, outcome.failure
    details = {
        "class": failure.kind if failure else None,
        "reproduce": outcome.reproduce(),
        "log_tail": outcome.result.lines[-LOG_TAIL:],
        "ended_by": outcome.ended_by,
    }
    findings = []
    if failure is not None:
        rule = SMOKE_CLASSES[failure.kind]
        waived = failure.kind in settings.allow
        origin = outcome.result.launch.origin
        roots = [origin[0], settings.root] if origin else [settings.root]
        path, line = _location(last_traceback(outcome.result.lines), roots)
        detail = f" ({failure.detail})" if failure.detail else ""
        message = f"{LABELS[failure.kind]}: {failure.evidence}{detail}"
        message += _link_hint(failure, settings, roots)
        if waived:
            message += f" [allowed: {failure.kind}]"
        severity = Severity.NOTE if waived else rule.default_severity
        findings.append(
            rule.finding(message, path=path, line=line, severity=severity, details=details)
        )
    if outcome.outside:
        rule = SMOKE_CLASSES["outside-sandbox"]
        shown = ", ".join(outcome.outside[:5]) + (" ..." if len(outcome.outside) > 5 else "")
        severity = Severity.NOTE if "outside-sandbox" in settings.allow else rule.default_severity
        message = f"the run changed files in the project: {shown}"
        extra = {**details, "class": "outside-sandbox", "files": outcome.outside}
        findings.append(rule.finding(message, severity=severity, details=extra))
    # A run that failed before its first step was not hurt by a missing shim.
    mattered = failure is None or outcome.observed_steps > 0
    if settings.shim != "off" and not outcome.shim.active and mattered:
        severity = Severity.WARNING if settings.shim == "on" else Severity.NOTE
        message = f"step shim {outcome.shim.status}: {outcome.shim.reason}"
        findings.append(SHIM_UNAVAILABLE.finding(message, severity=severity))
    return findings


# What the verdict path loads after the run (judge, ledger, rule table, report): loaded on a
# thread while the run trains, since a plain run of the command would not wait for it after
# its end (about 0.1 s of the gate's fixed cost; the run itself blocks in a wait meanwhile).
_VERDICT_MODULES = ("rentcheck.gates.judge", "rentcheck.gates.run", "rentcheck.report.lastrun")


def _prepare_verdict_meanwhile() -> None:
    import threading

    def load() -> None:
        import importlib

        try:
            for name in _VERDICT_MODULES:
                importlib.import_module(name)
            from rentcheck.registry import all_rules

            all_rules()  # cached: the rule table, plugins' entry points included
        except Exception:  # noqa: BLE001, S110 - the verdict path loads them again and says why
            pass

    threading.Thread(target=load, name="rentcheck-verdict-preload", daemon=True).start()


def run_smoke(
    settings: SmokeSettings, *, workdir_parent: str | None = None, keep_workdir: bool | None = None
) -> SmokeOutcome:
    """Run the smoke once. ``keep_workdir`` None keeps the working dir only when it failed."""
    scratch = new_scratch(settings, "smoke", workdir_parent)
    workdir = os.path.dirname(scratch.root)
    state_dir = tempfile.mkdtemp(prefix="rentcheck-state-")
    try:
        launch = launch_in(
            settings,
            scratch,
            name="smoke",
            state_dir=state_dir,
            shim_settings={
                "RENTCHECK_SHIM_STOP_AFTER": str(settings.steps),
                "RENTCHECK_SHIM_FINITE": "1",
            },
        )
        before = snapshot_tree(settings.root, settings.excludes, skip=[workdir, state_dir])
        _prepare_verdict_meanwhile()
        result = supervise(launch)
        after = snapshot_tree(settings.root, settings.excludes, skip=[workdir, state_dir])
    except BaseException:
        remove_scratch(scratch)
        raise
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    shim = shimreport.summarize(result.events, injected=launch.shim)
    _, records = parse_steps(result.lines, settings.step_patterns)
    losses = {r.step if r.step is not None else i: r.loss or "" for i, r in enumerate(records, 1)}
    outside = changed_paths(before, after) if before is not None and after is not None else []
    observed = 0 if shim.idle else max(shim.steps, len(losses))
    failure = classify_failure(
        result.returncode,
        result.timed_out,
        result.lines,
        shim,
        observed,
        ended_at=result.ended_at,
        cpu_at_limit=result.cpu_at_limit,
        started=result.started_at,
        steps=settings.steps,
    )
    outcome = SmokeOutcome(settings, result, shim, failure, outside, losses)
    outcome.findings = _findings(outcome)
    keep = not outcome.passed if keep_workdir is None else keep_workdir
    if keep:
        outcome.workdir = workdir
        keep_log(result, os.path.join(workdir, "smoke.log"))
    else:
        remove_scratch(scratch)
    return outcome

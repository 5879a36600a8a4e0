"""One run of one gate: prerequisites first, then one judgement, then one ledger line.

The CLI commands, ``rentcheck gate`` and the pytest items all go through ``GateRun``: it
reads the ledger for the gate's prerequisites before the gate does any work (a launch must
refuse before it starts anything), judges the result with ``judge`` and appends the
verdict, with its evidence, to ``.rentcheck/ledger.jsonl``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping

from rentcheck.config import Config, check_section_keys
from rentcheck.gates.evidence import ProjectFiles, project_files, save_tree
from rentcheck.gates.judge import GateResult, Verdict, judge
from rentcheck.gates.order import check_order, force_findings
from rentcheck.gates.table import Gate, gate_named
from rentcheck.ledger import LEDGER_SCHEMA, append_entry, read_ledger
from rentcheck.model import Finding, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from rentcheck.model import Rule

__all__ = ["GateRun", "ledger_entry"]


class GateRun:
    """A gate about to run under ``config``, for ``host`` / ``manifest`` where they apply."""

    def __init__(
        self,
        config: Config,
        gate: str | Gate,
        *,
        host: str | None = None,
        manifest: str | None = None,
        force_reason: str | None = None,
        via: str = "cli",
    ) -> None:
        self.config = config
        self.gate = gate if isinstance(gate, Gate) else gate_named(gate)
        self.host = host
        self.manifest = manifest
        self.force_reason = force_reason
        self.via = via
        self.order_findings: list[Finding] = []
        self._project: ProjectFiles | None = None
        if self.gate.section and self.gate.section_keys:
            # A gate whose row names its keys (a plugin's, a planned one): refuse typos here.
            # The built-in gates check theirs in their settings modules.
            check_section_keys(config, self.gate.section, self.gate.section_keys)

    @property
    def root(self) -> str:
        return os.path.abspath(self.config.root)

    def project(self) -> ProjectFiles:
        """The project's files and digest, computed once per run."""
        if self._project is None:
            self._project = project_files(self.config)
        return self._project

    def evidence(self) -> dict[str, Any]:
        needs_digest = "digest" in self.gate.evidence or any(
            "digest" in r.match for r in self.gate.requires
        )
        project = self.project() if needs_digest else None
        return {
            "digest": project.digest if project else None,
            "_files": project.files if project else None,
            "host": self.host,
            "manifest": self.manifest,
        }

    def precheck(self) -> bool:
        """Check the prerequisites; True when the gate may do its work (met, or forced)."""
        if not self.gate.requires:
            return True
        found = check_order(self.config, self.gate, read_ledger(self.root), self.evidence())
        blocking = [f for f in found if f.severity >= Severity.WARNING]
        if blocking and self.force_reason:
            self.order_findings = force_findings(found, self.force_reason)
            return True
        self.order_findings = found
        return not blocking

    def run_runner(self, options: Mapping[str, Any]) -> GateResult:
        """Prerequisites, then the row's runner when they hold and it has one (a plugin's
        gate); an empty result otherwise. The order findings are added by ``conclude``."""
        if self.precheck() and self.gate.runner is not None:
            import importlib

            module, _, function = self.gate.runner.partition(":")
            runner = getattr(importlib.import_module(module), function)
            result: GateResult = runner(self.config, dict(options))
            return result
        return GateResult(self.gate.name, [])

    def with_order(self, result: GateResult) -> GateResult:
        """``result`` with the prerequisite findings in front of the gate's own."""
        result.findings = [*self.order_findings, *result.findings]
        return result

    def conclude(
        self,
        result: GateResult,
        *,
        exit_zero: bool = False,
        rules: Mapping[str, Rule] | None = None,
        record: bool = True,
    ) -> Verdict:
        """Judge ``result`` (with the order findings) and append it to the ledger."""
        self.with_order(result)
        verdict = judge(
            self.config,
            result,
            section=self.gate.section,
            exit_zero=exit_zero,
            rules=rules,
            # A planned run (`rentcheck gate launch` without a command) proves prerequisites
            # only: its verdict is "ready", never "pass".
            proves=() if self.gate.planned else self.gate.proves,
        )
        if record and not result.partial:
            self.record(result, verdict)
        return verdict

    def record(self, result: GateResult, verdict: Verdict) -> str | None:
        """Append the verdict; a ledger that cannot be written is a warning, not a failure."""
        return self.record_outcome(
            passed=verdict.passed,
            failing=sorted({f.code for f in verdict.failing}),
            findings=len(verdict.findings),
            host=result.host,
            profile=result.profile,
            evidence=result.evidence,
            pass_evidence=result.pass_evidence,
        )

    def record_outcome(
        self,
        *,
        passed: bool,
        failing: list[str],
        findings: int,
        host: str | None = None,
        profile: str | None = None,
        evidence: Mapping[str, str | None] | None = None,
        pass_evidence: Mapping[str, str | None] | None = None,
    ) -> str | None:
        """Append one ledger line (the pytest controller calls this with its items' outcome
        and evidence). ``pass_evidence`` (what means "released") is kept only when it passed."""
        entry = ledger_entry(
            self,
            passed=passed,
            failing=failing,
            findings=findings,
            host=host,
            profile=profile,
            evidence={**(evidence or {}), **((pass_evidence or {}) if passed else {})},
        )
        try:
            return append_entry(self.root, entry)
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"rentcheck: warning: the ledger was not written: {exc}\n")
            return None

    def forced(self) -> bool:
        return any(f.code == "RC913" for f in self.order_findings)


def ledger_entry(
    run: GateRun,
    *,
    passed: bool,
    failing: list[str],
    findings: int,
    host: str | None,
    profile: str | None,
    evidence: Mapping[str, str | None],
) -> dict[str, Any]:
    """The ledger line of one gate result (``rentcheck/ledger/v1``, see the README)."""
    from rentcheck import __version__

    known = run.evidence()
    digest = known["digest"]
    if digest is not None:
        save_tree(run.project())
    if run.forced() and passed:
        outcome = "forced"
    elif run.gate.planned and passed:
        outcome = "ready"  # only its prerequisites exist so far
    else:
        outcome = "pass" if passed else "fail"
    now = time.time()
    recorded = {key: value for key, value in evidence.items() if value is not None}
    if run.manifest is not None:
        recorded.setdefault("manifest", run.manifest)
    return {
        "schema": LEDGER_SCHEMA,
        "gate": run.gate.name,
        "phase": run.gate.phase,
        "verdict": outcome,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "unix_time": round(now, 3),
        "host": host or run.host,
        "profile": profile,
        "digest": digest,
        "config_digest": run.config.digest(),
        "evidence": recorded,
        "failing": failing,
        "findings": findings,
        "forced": {"reason": run.force_reason} if run.forced() else None,
        "via": run.via,
        "version": __version__,
    }

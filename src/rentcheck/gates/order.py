"""Order: before a gate runs, its prerequisites are read from the ledger.

A requirement holds when the newest ledger entry of the required gate for the same evidence
(the project's files, the host, the manifest) passed and is young enough. Otherwise the gate
gets a finding that names the missing gate and the command that runs it. ``--force --reason``
turns those findings into notes, adds RC913, and the ledger records the force.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from rentcheck.config import Config, section_error
from rentcheck.gates.evidence import changed_files, saved_tree
from rentcheck.gates.rules import (
    PREREQUISITE_FAILED,
    PREREQUISITE_FORCED,
    PREREQUISITE_MISSING,
    PREREQUISITE_STALE,
)
from rentcheck.gates.table import Gate, Requirement, gate_named
from rentcheck.ledger import LedgerRead
from rentcheck.model import Finding, Rule, Severity
from rentcheck.record import replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["check_order", "force_findings", "parse_age", "rerun_command"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> float:
    """``"90s"``, ``"30m"``, ``"6h"``, ``"2d"`` (or plain seconds) to seconds."""
    value = str(text).strip().lower()
    unit = _UNITS.get(value[-1:])
    number = value[:-1] if unit is not None else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise ValueError(f"{text!r} is not an age (use e.g. 90s, 30m, 6h, 2d)") from None
    if seconds <= 0:
        raise ValueError(f"{text!r}: an age must be positive")
    return seconds


def rerun_command(gate: Gate, host: str | None) -> str:
    """The command that runs ``gate`` (with the host, where it is the evidence)."""
    command = f"rentcheck {gate.commands[0]}" if gate.commands else f"rentcheck gate {gate.name}"
    if "host" in gate.evidence:
        command += f" --host {host or 'HOST'}"
    return command


def check_order(
    config: Config,
    gate: Gate,
    ledger: LedgerRead,
    evidence: Mapping[str, str | None],
    *,
    now: float | None = None,
) -> list[Finding]:
    """One finding per requirement of ``gate`` that the ledger does not show as met."""
    now = time.time() if now is None else now
    found: list[Finding] = []
    for requirement in gate.requires:
        required = gate_named(requirement.gate)
        if requirement.when_configured and not config.section(required.section or ""):
            continue
        problem = _unmet(
            config,
            gate,
            requirement=requirement,
            required=required,
            ledger=ledger,
            evidence=evidence,
            now=now,
        )
        if problem is not None:
            rule, message, details = problem
            # A requirement that could not be checked (no --host given) is said, not failed:
            # the command that has the host (launch) checks it.
            severity = Severity.NOTE if "unchecked" in details else rule.default_severity
            details = {"gate": gate.name, "requires": required.name, **details}
            found.append(
                rule.finding(message, host=evidence.get("host"), severity=severity, details=details)
            )
    return found


def _unmet(
    config: Config,
    gate: Gate,
    *,
    requirement: Requirement,
    required: Gate,
    ledger: LedgerRead,
    evidence: Mapping[str, str | None],
    now: float,
) -> tuple[Rule, str, dict[str, Any]] | None:
    host = evidence.get("host")
    command = rerun_command(required, host)
    unknown = [key for key in requirement.match if evidence.get(key) is None]
    if unknown:
        what = ", ".join(unknown)
        return (
            PREREQUISITE_MISSING,
            f"{gate.name} needs {required.name} for the same {what}, and no {what} was given: "
            f"the {required.name} requirement was not checked (give --{unknown[0]})",
            {"command": command, "unchecked": unknown},
        )
    entries = [e for e in ledger.entries if e.get("gate") == required.name and not e.get("partial")]
    wanted = {key: evidence[key] for key in requirement.match}
    same = [e for e in entries if all(_evidence(e, k) == v for k, v in wanted.items())]
    scope = _scope_words(requirement, evidence)
    if not same:
        passed = [e for e in entries if e.get("verdict") in ("pass", "forced")]
        if passed and "digest" in wanted:
            changed = _changed_since(config.root, passed[-1], evidence)
            shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
            return (
                PREREQUISITE_STALE,
                f"{len(changed)} file(s) changed since {required.name} passed: {shown}; run "
                f"`{command}` again before {gate.name}",
                {"command": command, "changed": changed[:50]},
            )
        return (
            PREREQUISITE_MISSING,
            f"{gate.name} needs {required.name} to pass {scope} first: run `{command}`",
            {"command": command},
        )
    latest = same[-1]
    if latest.get("verdict") == "fail":
        return (
            PREREQUISITE_FAILED,
            f"the last {required.name} {scope} failed ({latest.get('time')}): fix what it "
            f"found and run `{command}` again",
            {"command": command, "when": latest.get("time")},
        )
    if requirement.max_age_key is not None:
        limit = _max_age(config, gate, requirement)
        age = now - float(latest.get("unix_time", 0))
        if limit is not None and age > limit:
            return (
                PREREQUISITE_STALE,
                f"the last {required.name} {scope} is {_human(age)} old (limit "
                f"{_human(limit)}, {gate.section}.{requirement.max_age_key}): run `{command}`",
                {"command": command, "age_s": round(age), "limit_s": limit},
            )
    return None


def _evidence(entry: Mapping[str, Any], key: str) -> Any:
    if key in ("digest", "host"):
        return entry.get(key)
    evidence = entry.get("evidence")
    return evidence.get(key) if isinstance(evidence, dict) else None


def _scope_words(requirement: Requirement, evidence: Mapping[str, str | None]) -> str:
    words = []
    if "digest" in requirement.match:
        words.append("on the current files")
    if "host" in requirement.match:
        words.append(f"on {evidence.get('host')}")
    if "manifest" in requirement.match:
        words.append("for the manifest on the box now")
    return " and ".join(words)


def _changed_since(root: str, entry: Mapping[str, Any], evidence: Mapping[str, Any]) -> list[str]:
    before = saved_tree(root, str(entry.get("digest", "")))
    now = evidence.get("_files")
    if before is None or not isinstance(now, dict):
        return ["(the file list of the earlier run is not kept)"]
    return changed_files(before, now)


def _max_age(config: Config, gate: Gate, requirement: Requirement) -> float | None:
    key = requirement.max_age_key or ""
    raw = config.section(gate.section or "").get(key, requirement.default_age)
    if raw is None:
        return None
    try:
        return parse_age(raw)
    except ValueError as exc:
        raise section_error(config, gate.section or "", key, str(exc)) from None


def _human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def force_findings(findings: list[Finding], reason: str) -> list[Finding]:
    """The order findings of a forced gate: each a note, plus one RC913 with the reason."""
    if not findings:
        return []
    forced = [
        replace(f, severity=Severity.NOTE, message=f"forced ({reason}): {f.message}")
        for f in findings
    ]
    missing = sorted({str(f.details.get("requires")) for f in findings})
    message = f"passed with --force although {', '.join(missing)} did not hold: {reason}"
    forced.append(
        PREREQUISITE_FORCED.finding(message, details={"reason": reason, "requires": missing})
    )
    return forced

"""One audit of one box, as the CLI and the pytest gate both run it: connect, probe, judge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rentcheck.box.audit import evaluate
from rentcheck.box.durable import ProfileView, profile_view
from rentcheck.box.facts import gather_facts, probe_request
from rentcheck.box.settings import AuditSettings
from rentcheck.box.transport import Box, BoxStats, open_box
from rentcheck.config import Config
from rentcheck.errors import UsageError
from rentcheck.model import Finding, Rule

__all__ = ["AuditResult", "load_profile", "run_audit"]


@dataclass
class AuditResult:
    host: str
    facts: dict[str, Any]
    findings: list[Finding]
    stats: BoxStats
    profile: ProfileView | None

    def transport(self) -> dict[str, Any]:
        """The wire cost of the audit, for the JSON report and the latency benchmark."""
        return {
            "connections": self.stats.connections,
            "exec_requests": self.stats.exec_requests,
            "round_trip_s": self.facts.get("probe", {}).get("round_trip_s"),
        }

    @property
    def seen(self) -> dict[str, int]:
        """What the audit saw, for the gate's proof: a box whose probe answered with facts."""
        return {"hosts": 1 if self.facts.get("schema") else 0}


def load_profile(name: str, config: Config) -> ProfileView:
    """The platform profile ``name``, when this rentcheck has platform profiles at all."""
    try:
        from rentcheck import profiles  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        raise UsageError(
            f"--profile {name}: this rentcheck has no platform profiles yet",
            hint="name the durable mounts in [tool.rentcheck.audit] durable_mounts instead",
        ) from None
    loader = getattr(profiles, "load_profile", None)
    if loader is None:
        raise UsageError(f"--profile {name}: rentcheck.profiles has no load_profile()")
    return profile_view(loader(name, config), name)


def with_project_python(settings: AuditSettings, config: Config, host: str) -> AuditSettings:
    """The torch facts come from the project's interpreter, not the system ``python3``.

    A configured ``python`` (``[tool.rentcheck.audit] python`` or ``--python``) is always
    asked for its torch facts. ``--host local`` in a project with a smoke section uses the
    interpreter that gate runs (its ``python``, the active virtualenv or conda env, the
    project's ``.venv``), when there is such an environment.
    """
    if settings.python_configured:
        return replace(settings, torch=True if settings.torch is None else settings.torch)
    smoke = config.section("smoke")
    if host != "local" or not smoke:
        return settings
    from rentcheck.run.interpreter import find_interpreter

    smoke_python = smoke.get("python")
    found = find_interpreter(config.root, smoke_python if isinstance(smoke_python, str) else None)
    if isinstance(found, str) or (found.bin_dir is None and smoke_python is None):
        return settings  # no project environment: nothing better than the system python3
    torch = True if settings.torch is None else settings.torch
    return replace(settings, python=found.path, torch=torch)


def run_audit(
    host: str,
    config: Config,
    settings: AuditSettings,
    rules: Mapping[str, Rule],
    *,
    box: Box | None = None,
) -> AuditResult:
    """Probe ``host`` once and return its findings (raises RemoteError if unreachable)."""
    settings = with_project_python(settings, config, host)
    profile = load_profile(settings.profile, config) if settings.profile else None
    if box is None:
        box = open_box(
            host, ssh_config=settings.ssh_config, connect_timeout=settings.connect_timeout
        )
    facts = gather_facts(box, probe_request(settings, host), settings.timeout)
    # Every finding: which count is the judgement's (rentcheck.gates.judge), per gate.
    findings = evaluate(facts, settings, host, profile)
    return AuditResult(host, facts, findings, box.stats, profile)

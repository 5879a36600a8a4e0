"""pytest adapter for the smoke and resume gates.

``pytest --rentcheck-smoke`` / ``--rentcheck-resume`` add one item each that runs the same gate
as ``rentcheck smoke`` / ``rentcheck resume`` (settings from the project's rentcheck config)
and fails with the verdict and finding lines, no traceback. A project's own tests join a gate
with ``@pytest.mark.rentcheck_gate("smoke")`` (or ``"resume"``): they run only when that gate
was asked for, and the terminal summary reports each gate as a whole. The fixtures
``rentcheck_smoke`` and ``rentcheck_resume`` run the gate's machinery with overrides, e.g. an
overfit-one-batch test. Nothing heavy is imported until an item or a fixture runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr
    from _pytest.terminal import TerminalReporter

    from rentcheck.config import Config
    from rentcheck.model import Finding
    from rentcheck.run.resume_outcome import ResumeOutcome
    from rentcheck.run.smoke import SmokeOutcome

__all__ = ["ResumeRunner", "RunGateError", "RunGateItem", "SmokeRunner"]

GATES = ("smoke", "resume")
_PROPERTY = "rentcheck_gate"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rentcheck")
    group.addoption(
        "--rentcheck-smoke",
        action="store_true",
        help="run the smoke gate ([tool.rentcheck.smoke]); tests marked "
        "rentcheck_gate('smoke') join it",
    )
    group.addoption(
        "--rentcheck-resume",
        action="store_true",
        help="run the resume gate ([tool.rentcheck.resume]); tests marked "
        "rentcheck_gate('resume') join it",
    )


def _requested(config: pytest.Config) -> list[str]:
    return [gate for gate in GATES if config.getoption(f"rentcheck_{gate}", False)]


def _load(config: pytest.Config) -> Config:
    from rentcheck.config import load_config

    return load_config(str(config.rootpath), explicit=config.getoption("rentcheck_config", None))


# First, so that -m/-k selection (pytest's own hook) also sees the gate items.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    requested = _requested(config)
    for item in items:
        marker = item.get_closest_marker("rentcheck_gate")
        gate = marker.args[0] if marker and marker.args else None
        if gate not in GATES:
            continue
        if gate in requested:
            item.user_properties.append((_PROPERTY, gate))
        else:
            reason = f"the {gate} gate was not asked for (--rentcheck-{gate})"
            item.add_marker(pytest.mark.skip(reason=reason))
    gate_items: list[pytest.Item] = []
    for gate in requested:
        gate_item = RunGateItem.from_parent(session, name=f"rentcheck-{gate}")
        gate_item.gate = gate
        gate_item.add_marker(pytest.mark.rentcheck_gate(gate))
        gate_item.user_properties.append((_PROPERTY, gate))
        gate_items.append(gate_item)
    items[:0] = gate_items


class RunGateError(Exception):
    """A gate's verdict and findings, shown without a traceback."""


class RunGateItem(pytest.Item):
    gate: str = "smoke"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("rentcheck")

    def runtest(self) -> None:
        config = _load(self.config)
        runner = SmokeRunner(config) if self.gate == "smoke" else ResumeRunner(config)
        outcome: SmokeOutcome | ResumeOutcome = runner.run()
        failing = [f for f in outcome.findings if f.severity >= config.fail_level]
        if failing:
            raise RunGateError("\n".join([*outcome.verdict_lines(), "", *_finding_lines(failing)]))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        if excinfo.errisinstance(RunGateError):
            return str(excinfo.value)
        from rentcheck.errors import RentcheckError

        if excinfo.errisinstance(RentcheckError):
            return f"rentcheck {self.gate}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"rentcheck-{self.gate}"


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    return [f"{f.location()} {f.code} {f.message}" for f in findings]


class SmokeRunner:
    """The smoke gate of this project, runnable with overrides from a test."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def run(
        self,
        *,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        extra_args: Sequence[str] = (),
        steps: int | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        shim: str | None = None,
        workdir_parent: str | None = None,
    ) -> SmokeOutcome:
        """Run once; ``args`` replaces the configured args, ``extra_args`` are appended."""
        from rentcheck.run.settings import smoke_settings
        from rentcheck.run.smoke import run_smoke

        overrides = _overrides(
            self.config, "smoke", command=command, args=args, extra_args=extra_args, env=env
        )
        overrides.update(steps=steps, timeout=timeout, shim=shim)
        return run_smoke(smoke_settings(self.config, overrides), workdir_parent=workdir_parent)


class ResumeRunner:
    """The resume gate of this project, runnable with overrides from a test."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def run(
        self,
        *,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        extra_args: Sequence[str] = (),
        steps: int | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        signals: Sequence[str] | None = None,
        kill_during_save: bool | None = None,
        workdir_parent: str | None = None,
    ) -> ResumeOutcome:
        from rentcheck.run.resume import run_resume
        from rentcheck.run.settings import resume_settings

        overrides = _overrides(
            self.config, "resume", command=command, args=args, extra_args=extra_args, env=env
        )
        overrides.update(steps=steps, timeout=timeout, signals=signals)
        overrides["kill-during-save"] = kill_during_save
        return run_resume(resume_settings(self.config, overrides), workdir_parent=workdir_parent)


def _overrides(
    config: Config,
    section: str,
    *,
    command: Sequence[str] | None,
    args: Sequence[str] | None,
    extra_args: Sequence[str],
    env: dict[str, str] | None,
) -> dict[str, Any]:
    table = config.section(section)
    base_args = list(args) if args is not None else None
    if extra_args:
        configured = table.get("args", [])
        configured = [configured] if isinstance(configured, str) else list(configured)
        base_args = (base_args if base_args is not None else configured) + list(extra_args)
    merged_env = {**dict(table.get("env", {})), **env} if env else None
    return {
        "command": list(command) if command is not None else None,
        "args": base_args,
        "env": merged_env,
    }


@pytest.fixture(scope="session")
def rentcheck_smoke(pytestconfig: pytest.Config) -> SmokeRunner:
    """Runs this project's smoke command (``.run(extra_args=[...], steps=N)``)."""
    return SmokeRunner(_load(pytestconfig))


@pytest.fixture(scope="session")
def rentcheck_resume(pytestconfig: pytest.Config) -> ResumeRunner:
    """Runs this project's resume gate (``.run(signals=["SIGKILL"], ...)``)."""
    return ResumeRunner(_load(pytestconfig))


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    requested = _requested(terminalreporter.config)
    if not requested:
        return
    results: dict[str, dict[str, list[str]]] = {gate: {} for gate in requested}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport):
                continue  # e.g. deselected items
            gate = dict(report.user_properties).get(_PROPERTY)
            # The call decides; setup and teardown count only when they did not pass.
            if gate in results and (report.when == "call" or not report.passed):
                results[gate].setdefault(report.outcome, []).append(report.nodeid)
    for gate, outcomes in results.items():
        total = sum(len(v) for v in outcomes.values())
        failed = outcomes.get("failed", [])
        verdict = "FAILED" if failed or not total else "PASSED"
        counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(outcomes.items()))
        terminalreporter.write_line(f"rentcheck {gate} gate: {verdict} ({counts or 'nothing ran'})")
        for nodeid in failed:
            terminalreporter.write_line(f"  failed: {nodeid}")

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
from typing import TYPE_CHECKING, Any

import pytest

from rentcheck.gates.pytest_items import GateItem

if TYPE_CHECKING:
    from rentcheck.config import Config
    from rentcheck.run.resume_outcome import ResumeOutcome
    from rentcheck.run.smoke import SmokeOutcome

__all__ = ["ResumeRunner", "RunGateItem", "SmokeRunner"]

GATES = ("smoke", "resume")


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


def _load(config: pytest.Config) -> Config:
    from rentcheck.gates.pytest_items import load_project_config

    return load_project_config(config)


# First, so that -m/-k selection (pytest's own hook) also sees the gate items.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import requested_gates

    requested = requested_gates(config)
    gate_items: list[pytest.Item] = []
    for gate in GATES:
        if gate in requested:
            gate_item = RunGateItem.from_parent(session, name=f"rentcheck-{gate}")
            gate_item.setup_gate(gate)
            gate_items.append(gate_item)
    items[:0] = gate_items


class RunGateItem(GateItem):
    def runtest(self) -> None:
        from rentcheck.run.gate_results import resume_result, smoke_result

        config = _load(self.config)
        if self.gate == "smoke":
            result = smoke_result(SmokeRunner(config).run())
        else:
            result = resume_result(ResumeRunner(config).run())
        self.raise_if_failing(config, result)


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
    found: dict[str, Any] = {
        "command": list(command) if command is not None else None,
        "args": base_args,
        "env": merged_env,
    }
    if "python" not in table and "python" not in config.section("smoke"):
        # Under pytest the project's interpreter is the one running pytest (.venv/bin/pytest
        # with no venv activated: `python` on PATH may be another, without torch).
        import sys

        found["python"] = sys.executable
    return found


@pytest.fixture(scope="session")
def rentcheck_smoke(pytestconfig: pytest.Config) -> SmokeRunner:
    """Runs this project's smoke command (``.run(extra_args=[...], steps=N)``)."""
    return SmokeRunner(_load(pytestconfig))


@pytest.fixture(scope="session")
def rentcheck_resume(pytestconfig: pytest.Config) -> ResumeRunner:
    """Runs this project's resume gate (``.run(signals=["SIGKILL"], ...)``)."""
    return ResumeRunner(_load(pytestconfig))

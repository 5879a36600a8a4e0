"""pytest adapter for the verify gate: ``--rentcheck-verify PATH`` items and ``rentcheck_verify``.

``pytest --rentcheck-verify results/`` adds one item per pulled root that runs the same check
as ``rentcheck verify results/`` (settings from the project's ``[tool.rentcheck.verify]``) and
fails with one ``path CODE message`` line per blocking finding, no traceback. The item only
reads: the PULL_VERIFIED.json marker is written by the CLI. Tests marked
``rentcheck_gate("verify")`` run only when the gate was asked for; the ``rentcheck_verify``
fixture verifies a directory with the project's settings. Nothing heavy is imported until an
item or the fixture runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from rentcheck import record
from rentcheck.gates.pytest_items import GateItem

if TYPE_CHECKING:
    from rentcheck.config import Config
    from rentcheck.pull.settings import VerifySettings
    from rentcheck.pull.verify import VerifyResult

__all__ = ["VerifyItem"]

GATE = "verify"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rentcheck")
    group.addoption(
        "--rentcheck-verify",
        action="append",
        default=[],
        metavar="PATH",
        help="run the verify gate on the pulled directory PATH (against "
        "PATH/PULL_MANIFEST.json); repeatable",
    )
    group.addoption(
        "--rentcheck-expect-run-id",
        metavar="ID",
        help="the verify gate fails unless each manifest is for run ID",
    )


def _settings(config: pytest.Config, **overrides: Any) -> tuple[Config, VerifySettings]:
    from rentcheck.gates.pytest_items import load_project_config
    from rentcheck.pull.settings import verify_settings

    rc_config = load_project_config(config)
    return rc_config, verify_settings(rc_config, **overrides)


def _roots(config: pytest.Config) -> list[str]:
    """The ``--rentcheck-verify`` paths, relative to where pytest was started."""
    base = str(config.invocation_params.dir)
    given: list[str] = config.getoption("rentcheck_verify")
    return [os.path.join(base, root) for root in dict.fromkeys(given)]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import requested_gates
    from rentcheck.pull.pytest_pull import serves_verify

    roots = config.getoption("rentcheck_verify")
    if GATE in requested_gates(config) and not roots and not serves_verify(config):
        raise pytest.UsageError(
            "the verify gate needs the pulled directory: --rentcheck-verify PATH"
        )
    base = str(config.invocation_params.dir)
    for given in dict.fromkeys(roots):
        item = VerifyItem.from_parent(session, name=f"rentcheck-verify[{given}]")
        item.setup_gate(GATE)
        item.root = os.path.join(base, given)
        items.append(item)


@pytest.fixture
def rentcheck_verify(pytestconfig: pytest.Config) -> Callable[..., VerifyResult]:
    """``rentcheck_verify(root=None, manifest=None, *, expected_run_id=None, **settings)``.

    Verifies ``root`` (default: the first ``--rentcheck-verify`` PATH) with the project's
    settings, overridable by keyword (``deep=True``, ``nonfinite="warn"`` ...), and returns the
    ``VerifyResult``; ``result.ok`` tells whether it passed. Writes nothing.
    """

    def verify(
        root: str | os.PathLike[str] | None = None,
        manifest: str | os.PathLike[str] | None = None,
        *,
        expected_run_id: str | None = None,
        **overrides: Any,
    ) -> VerifyResult:
        from rentcheck.pull.gate import run_verify

        if root is None:
            roots = _roots(pytestconfig)
            if not roots:
                pytest.fail("rentcheck_verify: no root given and no --rentcheck-verify PATH")
            root = roots[0]
        _, settings = _settings(pytestconfig, **overrides)
        return run_verify(root, settings, manifest=manifest, expected_run_id=expected_run_id)

    return verify


class VerifyItem(GateItem):
    root: str

    def runtest(self) -> None:
        from rentcheck.pull.verify_gate import verify_gate

        rc_config, settings = _settings(self.config)
        # The one verify body: judged once, PULL_VERIFIED.json written only on a pass; the
        # controller records the outcome in the ledger.
        _, gate, _ = verify_gate(
            rc_config,
            settings,
            self.root,
            expected_run_id=self.config.getoption("rentcheck_expect_run_id"),
            record=False,
            via="pytest",
        )
        gate.findings = [
            record.replace(f, path=os.path.join(self.root, f.path) if f.path else self.root)
            for f in gate.findings
        ]
        self.raise_if_failing(rc_config, gate)

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name

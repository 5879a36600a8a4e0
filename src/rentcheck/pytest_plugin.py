"""pytest adapter: ``pytest --rentcheck`` (or ``--rentcheck-gate lint``) turns the lint gate
into test items; ``--rentcheck-gate NAME`` runs any gate or phase (rentcheck.gates.pytest_items).

Inert unless asked. With it, the session collects the project itself (the config's
directory, as ``rentcheck check`` walks it, whatever ``testpaths`` or the paths given to pytest
say): every file a selected rule applies to becomes one item (failures print
``path:line:col CODE message`` lines, no traceback), and one status item fails when nothing
was checked, so an empty or mis-pointed run cannot pass. Repository checks (e.g.
``.gitattributes``) run in the status item. Each item judges its own file, so the plugin
behaves the same with pytest-xdist (``-n``) as without it.

Importing this module must stay cheap: no torch, paramiko, safetensors or requests.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rentcheck.gates.pytest_items import GateFailure, GateItem

if TYPE_CHECKING:
    from rentcheck.lint.engine import Linter
    from rentcheck.lint.source import SourceFile

__all__ = ["RentcheckFileItem", "RentcheckProject", "RentcheckStatusItem"]

_LINTER_KEY = pytest.StashKey["Linter"]()
_STATUS_NAME = "rentcheck-status"
_PROJECT = "rentcheck-lint"


def _gate_plugins() -> tuple[str, ...]:
    """Each gate's own pytest module (options, fixtures, items), from the gate table; all
    served by this one entry point. Such a module must be as cheap to import as this one."""
    from rentcheck.gates.table import all_gates

    mine = __name__
    return tuple(
        dict.fromkeys(
            g.pytest_module for g in all_gates() if g.pytest_module != mine and g.pytest_module
        )
    )


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    import importlib

    from rentcheck.gates import pytest_items

    for name in _gate_plugins():
        # pytest_addoption is a historic hook: plugins registered now still get it called.
        if not pluginmanager.has_plugin(name):
            pluginmanager.register(importlib.import_module(name), name)
    group = parser.getgroup("rentcheck", "rentcheck gates for rented-GPU training")
    group.addoption(
        "--rentcheck",
        action="store_true",
        help="run the rentcheck lint gate: one item per checked file plus a status item",
    )
    group.addoption(
        "--rentcheck-config",
        metavar="FILE",
        help="rentcheck.yaml or pyproject.toml to use (default: found from the rootdir)",
    )
    pytest_items.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    from rentcheck.gates.pytest_items import GateRecorder, requested_gates
    from rentcheck.gates.table import all_gates

    if requested_gates(config):
        config.pluginmanager.register(GateRecorder(config), "rentcheck-gate-recorder")

    config.addinivalue_line("markers", "rentcheck: a rentcheck gate item (lint file or status)")
    names = ", ".join(g.name for g in all_gates())
    config.addinivalue_line(
        "markers",
        f"rentcheck_gate(name): make this test part of a rentcheck gate ({names}); it runs "
        "only when that gate is asked for, and its outcome is part of the gate's verdict",
    )


def _lint_requested(config: pytest.Config) -> bool:
    from rentcheck.gates.pytest_items import requested_gates

    return "lint" in requested_gates(config)


def _linter(config: pytest.Config) -> Linter:
    linter = config.stash.get(_LINTER_KEY, None)
    if linter is None:
        from rentcheck.config import load_config
        from rentcheck.lint.engine import Linter
        from rentcheck.registry import load_rule_set

        settings = load_config(str(config.rootpath), explicit=config.getoption("rentcheck_config"))
        linter = Linter(settings, load_rule_set(with_gates=False))
        config.stash[_LINTER_KEY] = linter
    return linter


@functools.lru_cache(maxsize=64)
def _git_root(directory: Path) -> str | None:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """With the lint gate asked for, the session collects one more node: the project (the
    config's directory, whatever ``testpaths`` or the command line's paths say), so its
    files and the status item are collected, and counted, like any test."""
    report = yield
    if (
        isinstance(collector, pytest.Session)
        and _lint_requested(collector.config)
        and report.passed
        and isinstance(report.result, list)
    ):
        root = Path(_linter(collector.config).config.root).resolve()
        report.result.append(RentcheckProject.from_parent(collector, name=_PROJECT, path=root))
    return report


class RentcheckProject(pytest.Collector):
    """The project's files as ``rentcheck check`` lists them (git's view in a work tree, the
    excludes applied): an item per file a selected rule reads, then the status item."""

    def collect(self) -> Iterator[pytest.Item]:
        from rentcheck.lint.engine import read_candidate
        from rentcheck.lint.walk import collect

        linter = _linter(self.config)
        root = linter.config.root
        checked: list[SourceFile] = []
        for candidate in collect([], root, linter.config.excludes):
            source = read_candidate(candidate)
            if source is None or not linter.wants(source):
                continue
            item = RentcheckFileItem.from_parent(
                self, name=candidate.path, path=Path(candidate.abspath)
            )
            item.setup_gate("lint")
            item.source = source
            checked.append(source)
            yield item
        status = RentcheckStatusItem.from_parent(self, name=_STATUS_NAME)
        status.setup_gate("lint")
        status.checked = checked
        yield status


@pytest.hookimpl(tryfirst=True)  # first, so that -m/-k selection also sees the gate items
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import add_table_items, join_marked_tests

    join_marked_tests(config, items)
    add_table_items(session, items)


class RentcheckFileItem(GateItem):
    source: SourceFile

    def runtest(self) -> None:
        linter = _linter(self.config)
        findings, _ = linter.check_source(self.source)
        from rentcheck.gates.judge import GateResult

        self.raise_if_failing(linter.config, GateResult("lint", findings, files_checked=1))

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"rentcheck {self.name}"


class RentcheckStatusItem(GateItem):
    """Fails when nothing was checked; also runs the repository-level checks."""

    checked: list[SourceFile]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checked = []

    def runtest(self) -> None:
        if not self.checked:
            raise GateFailure(
                "rentcheck checked no files: no file under the collected paths matches a "
                "selected rule (check the paths given to pytest and `exclude` in the config)"
            )
        linter = _linter(self.config)
        by_root: dict[str | None, list[SourceFile]] = {}
        for source in self.checked:
            by_root.setdefault(_git_root(Path(source.abspath).parent), []).append(source)
        findings = [
            f for root, files in by_root.items() for f in linter.project_findings(root, files)
        ]
        from rentcheck.gates.judge import GateResult

        seen = GateResult("lint", findings, files_checked=len(self.checked))
        self.raise_if_failing(linter.config, seen)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, _STATUS_NAME

"""pytest adapter: ``pytest --rentcheck`` turns the lint gate into test items.

Inert unless ``--rentcheck`` is given. With it, every file a selected rule applies to becomes
one item (failures print ``path:line:col CODE message`` lines, no traceback), and one status
item fails when nothing was checked, so an empty or mis-pointed run cannot pass. Repository
checks (e.g. ``.gitattributes``) run in the status item. Each item judges its own file, so the
plugin behaves the same with pytest-xdist (``-n``) as without it.

Importing this module must stay cheap: no torch, paramiko, safetensors or requests.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from rentcheck.lint.engine import Linter
    from rentcheck.lint.source import SourceFile
    from rentcheck.lint.walk import GitRepo
    from rentcheck.model import Finding

__all__ = ["RentcheckFile", "RentcheckFileItem", "RentcheckStatusItem"]

_LINTER_KEY = pytest.StashKey["Linter"]()
_STATUS_NAME = "rentcheck-status"

# Each gate (audit, verify, smoke, ...) brings its own pytest plugin module: options, fixtures
# and gate items, registered here so one entry point serves them all. Such a module must be
# as cheap to import as this one (heavy imports inside functions only).
GATE_PLUGINS: tuple[str, ...] = (
    "rentcheck.box.pytest_gate",
    "rentcheck.run.pytest_gate",
    "rentcheck.pull.pytest_gate",
)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    import importlib

    for name in GATE_PLUGINS:
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rentcheck: a rentcheck gate item (lint file or status)")
    config.addinivalue_line(
        "markers",
        "rentcheck_gate(name): make this test part of a rentcheck gate "
        "(lint, smoke, resume, audit, verify); it runs with that gate",
    )


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


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RentcheckFile | None:
    config = parent.config
    if not config.getoption("rentcheck"):
        return None
    from rentcheck.lint.source import SourceFile
    from rentcheck.pathmatch import matches_any

    linter = _linter(config)
    rel = os.path.relpath(file_path, linter.config.root).replace(os.sep, "/")
    if rel.startswith("..") or file_path.is_symlink():
        rel = str(file_path)
    if matches_any(rel.lstrip("/"), linter.config.excludes):
        return None
    try:
        source = SourceFile.read(rel, str(file_path), _index_mode(file_path))
    except OSError:
        return None
    if not linter.wants(source):
        return None
    collector = RentcheckFile.from_parent(parent, path=file_path)
    collector.source = source  # read once: the item and the status item judge these bytes
    return collector


def _index_mode(file_path: Path) -> int | None:
    root = _git_root(file_path.parent)
    if root is None:
        return None
    return _repo(root).index_mode(os.path.relpath(file_path, root).replace(os.sep, "/"))


@functools.lru_cache(maxsize=64)
def _repo(root: str) -> GitRepo:
    from rentcheck.lint.walk import GitRepo

    # One GitRepo per work tree: git is asked once whether core.fileMode makes st_mode lie.
    return GitRepo(root)


def _git_root(directory: Path) -> str | None:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("rentcheck"):
        return
    checked = [item for item in items if isinstance(item, RentcheckFileItem)]
    status = RentcheckStatusItem.from_parent(session, name=_STATUS_NAME)
    status.checked = [item.source for item in checked]
    items.append(status)


class RentcheckError(Exception):
    """Carries the finding lines of one failed item (shown without a traceback)."""


def _repr_failure(
    item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]
) -> str | TerminalRepr:
    if excinfo.errisinstance(RentcheckError):
        return str(excinfo.value)
    # An unexpected error inside rentcheck itself: keep pytest's full report for it.
    return pytest.Item.repr_failure(item, excinfo)


class RentcheckFile(pytest.File):
    source: SourceFile

    def collect(self) -> Iterator[RentcheckFileItem]:
        item = RentcheckFileItem.from_parent(self, name="rentcheck")
        item.source = self.source
        yield item


class RentcheckFileItem(pytest.Item):
    source: SourceFile

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("rentcheck")

    def runtest(self) -> None:
        linter = _linter(self.config)
        findings, _ = linter.check_source(self.source)
        _raise_if_failing(findings, linter)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        return _repr_failure(self, excinfo)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"rentcheck {self.path.name}"


def _raise_if_failing(findings: list[Finding], linter: Linter) -> None:
    failing = [f for f in findings if f.severity >= linter.config.fail_level]
    if failing:
        lines = [
            f"{f.location()} {f.code} {f.message}"
            for f in sorted(failing, key=lambda f: f.sort_key())
        ]
        raise RentcheckError("\n".join(lines))


class RentcheckStatusItem(pytest.Item):
    """Fails when nothing was checked; also runs the repository-level checks."""

    checked: list[SourceFile]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checked = []
        self.add_marker("rentcheck")

    def runtest(self) -> None:
        if not self.checked:
            raise RentcheckError(
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
        _raise_if_failing(findings, linter)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        return _repr_failure(self, excinfo)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, _STATUS_NAME

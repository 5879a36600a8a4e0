"""rentcheck: runnable gates for training on rented GPUs.

The public API is what ``__all__`` lists (pinned by a test); everything else is private.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)

# Where each public name lives. They are imported on first use (PEP 562), so that
# `rentcheck --version` and commands that need little do not pay for the whole model.
_EXPORTS = {
    "rentcheck.errors": (
        "ConfigError",
        "ConnectError",
        "FormatError",
        "GateError",
        "HostKeyError",
        "RemoteError",
        "RemoteTimeout",
        "RentcheckError",
        "UsageError",
    ),
    "rentcheck.lint.check": ("FileCheck", "Project", "ProjectCheck"),
    "rentcheck.lint.source": ("FileKind", "SourceFile"),
    "rentcheck.rulepack": (
        "BoxCheck",
        "BoxFacts",
        "GateCheck",
        "GateOutcome",
        "box_rule",
        "file_rule",
        "gate_rule",
    ),
    "rentcheck.model": (
        "Applicability",
        "Edit",
        "Finding",
        "Fix",
        "Rule",
        "RuleStatus",
        "Severity",
    ),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:
    from typing import Any

    from rentcheck.errors import (
        ConfigError,
        ConnectError,
        FormatError,
        GateError,
        HostKeyError,
        RemoteError,
        RemoteTimeout,
        RentcheckError,
        UsageError,
    )
    from rentcheck.lint.check import FileCheck, Project, ProjectCheck
    from rentcheck.lint.source import FileKind, SourceFile
    from rentcheck.model import Applicability, Edit, Finding, Fix, Rule, RuleStatus, Severity
    from rentcheck.rulepack import (
        BoxCheck,
        BoxFacts,
        GateCheck,
        GateOutcome,
        box_rule,
        file_rule,
        gate_rule,
    )


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'rentcheck' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


__all__ = [
    "Applicability",
    "BoxCheck",
    "BoxFacts",
    "ConfigError",
    "ConnectError",
    "Edit",
    "FileCheck",
    "FileKind",
    "Finding",
    "Fix",
    "FormatError",
    "GateCheck",
    "GateError",
    "GateOutcome",
    "HostKeyError",
    "Project",
    "ProjectCheck",
    "RemoteError",
    "RemoteTimeout",
    "RentcheckError",
    "Rule",
    "RuleStatus",
    "Severity",
    "SourceFile",
    "UsageError",
    "__version__",
    "box_rule",
    "file_rule",
    "gate_rule",
]

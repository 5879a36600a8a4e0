"""rentcheck: runnable gates for training on rented GPUs.

The public API is what ``__all__`` lists (pinned by a test); everything else is private.
"""

from __future__ import annotations

__version__ = "0.1.0"

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

__all__ = [
    "Applicability",
    "ConfigError",
    "ConnectError",
    "Edit",
    "FileCheck",
    "FileKind",
    "Finding",
    "Fix",
    "FormatError",
    "GateError",
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
]

"""The public API is exactly ``rentcheck.__all__``; changing it is a deliberate act."""

from __future__ import annotations

import rentcheck

EXPECTED = [
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
    "file_rule",
]


def test_exported_members() -> None:
    assert sorted(rentcheck.__all__) == sorted(EXPECTED)
    for name in rentcheck.__all__:
        assert hasattr(rentcheck, name)


def test_error_tree() -> None:
    assert issubclass(rentcheck.HostKeyError, rentcheck.RemoteError)
    assert issubclass(rentcheck.RemoteError, rentcheck.RentcheckError)
    assert str(rentcheck.ConfigError("bad key", hint="fix it")) == "bad key (fix it)"

"""The public API is exactly ``rentcheck.__all__``; changing it is a deliberate act."""

from __future__ import annotations

import rentcheck

EXPECTED = [
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


def test_exported_members() -> None:
    assert sorted(rentcheck.__all__) == sorted(EXPECTED)
    for name in rentcheck.__all__:
        assert hasattr(rentcheck, name)


def test_error_tree() -> None:
    assert issubclass(rentcheck.HostKeyError, rentcheck.RemoteError)
    assert issubclass(rentcheck.RemoteError, rentcheck.RentcheckError)
    assert str(rentcheck.ConfigError("bad key", hint="fix it")) == "bad key (fix it)"

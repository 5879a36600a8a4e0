"""Small helpers shared by the audit rules: building findings and reading facts defensively."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rentcheck.box.rules import RULES_BY_CODE
from rentcheck.model import Finding, Severity

__all__ = ["dig", "finding", "percent"]


def finding(
    code: str, message: str, host: str, severity: Severity | None = None, **details: Any
) -> Finding:
    return RULES_BY_CODE[code].finding(message, host=host, severity=severity, details=details)


def dig(facts: Mapping[str, Any] | None, *keys: str) -> Any:
    """``facts[k1][k2]...`` or None when any level is missing (facts may be partial)."""
    current: Any = facts
    for key in keys:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "n/a"

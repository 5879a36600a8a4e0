"""Turning a rule over a parsed script into a FileCheck, and findings at script positions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rentcheck.lint.check import FileCheck
from rentcheck.lint.shell.tree import ShellScript, script_of, tree_sitter_available
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Fix, Rule

__all__ = ["Hit", "shell_check"]

# (line, col, message, details, fix)
Hit = tuple[int, int, str, dict[str, Any], Fix | None]
ScriptRule = Callable[[ShellScript], Iterable[Hit]]


def _applies(source: SourceFile) -> bool:
    return (
        source.kind is FileKind.SHELL
        and not source.truncated
        and not source.is_binary
        and tree_sitter_available()
    )


_SHELL = frozenset({FileKind.SHELL})


def shell_check(rule: Rule, run: ScriptRule) -> FileCheck:
    def check(source: SourceFile) -> list[Finding]:
        return [
            Finding(
                code=rule.code,
                severity=rule.default_severity,
                message=message,
                path=source.path,
                line=line,
                col=col,
                details=details,
                fix=fix,
            )
            for line, col, message, details, fix in run(script_of(source))
        ]

    return FileCheck(rule, _applies, check, content_only=True, kinds=_SHELL)


def hit(line: int, col: int, message: str, fix: Fix | None = None, **details: Any) -> Hit:
    return (line, col, message, details, fix)

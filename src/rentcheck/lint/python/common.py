"""Turning a check of one Python file into a FileCheck, without importing ``ast``.

The checks themselves live in ``*_checks`` modules and are imported on the first file that
needs them: a run whose Python files are all answered from the findings cache (or that has
none) never loads ``ast`` and the check code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Rule

__all__ = ["PYTHON_ONLY", "feeds_python_heredoc", "python_applies", "python_check"]

PYTHON_ONLY = frozenset({FileKind.PYTHON})
# Shell scripts too: the Python they feed an interpreter as a heredoc is checked as well.
_PYTHON_AND_SHELL = frozenset({FileKind.PYTHON, FileKind.SHELL})


def python_applies(source: SourceFile) -> bool:
    return source.kind is FileKind.PYTHON and not source.is_binary and not source.truncated


def feeds_python_heredoc(source: SourceFile) -> bool:
    """Whether a shell script may feed Python to an interpreter as a heredoc (cheap test)."""
    if source.kind is not FileKind.SHELL:
        return False
    data = source.data
    if source.is_binary or source.truncated or b"<<" not in data or b"python" not in data:
        return False
    from rentcheck.lint.shell.common import tree_sitter_available

    return tree_sitter_available()


def _applies(source: SourceFile) -> bool:
    if source.kind is FileKind.PYTHON:
        return python_applies(source)
    return feeds_python_heredoc(source)


def python_check(rule: Rule, module: str, function: str) -> FileCheck:
    """A check of one Python file whose findings depend on its content alone; the check is
    ``function`` in ``rentcheck.lint.python.<module>``, imported when first run."""
    found: list[Callable[[SourceFile], Iterable[Finding]]] = []

    def run(source: SourceFile) -> Iterable[Finding]:
        if not found:
            found.append(getattr(importlib.import_module(f"{__package__}.{module}"), function))
        if source.kind is FileKind.PYTHON:
            return found[0](source)
        from rentcheck.lint.python.heredoc import heredoc_findings

        return list(heredoc_findings(source, found[0]))

    return FileCheck(rule, _applies, run, content_only=True, kinds=_PYTHON_AND_SHELL)

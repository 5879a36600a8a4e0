"""Shared ``ast`` helpers: one parse per file, dotted call names, scopes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from rentcheck.lint.source import SourceFile
from rentcheck.model import Finding, Rule

__all__ = [
    "call_name",
    "enclosing_scopes",
    "finding_at",
    "has_main_guard",
    "keyword",
    "module_of",
    "parent",
    "walk_calls",
]


def module_of(source: SourceFile) -> ast.Module | None:
    """The parsed module (None when it does not parse: ruff reports the syntax error)."""
    memo: dict[str, Any] = source.memo
    if "python" not in memo:
        try:
            tree = ast.parse(source.data, filename=source.path)
        except (SyntaxError, ValueError):
            memo["python"] = None
        else:
            _link_parents(tree)
            memo["python"] = tree
    module: ast.Module | None = memo["python"]
    return module


def _link_parents(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._rc_parent = node  # type: ignore[attr-defined]


def parent(node: ast.AST) -> ast.AST | None:
    found: ast.AST | None = getattr(node, "_rc_parent", None)
    return found


def call_name(call: ast.Call) -> str:
    """``torch.save`` for torch.save(...), ``save`` for save(...), ``.cuda`` for x.cuda()."""
    func = call.func
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    elif parts:
        parts.append("")  # a method on an expression: keep the leading dot
    return ".".join(reversed(parts))


def walk_calls(node: ast.AST) -> Iterator[ast.Call]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            yield child


def enclosing_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """The function(s) around ``node``, innermost first, then the module."""
    current = parent(node)
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            yield current
        current = parent(current)


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def has_main_guard(module: ast.Module) -> bool:
    for statement in module.body:
        if (
            isinstance(statement, ast.If)
            and "__name__" in ast.unparse(statement.test)
            and ("__main__" in ast.unparse(statement.test))
        ):
            return True
    return False


def finding_at(
    rule: Rule, source: SourceFile, node: ast.expr, message: str, *, span: bool = True
) -> Finding:
    """A finding of ``rule`` at ``node``; ``span``: with where the node ends, too."""
    return Finding(
        code=rule.code,
        severity=rule.default_severity,
        message=message,
        path=source.path,
        line=node.lineno,
        col=node.col_offset + 1,
        end_line=node.end_lineno if span else None,
        end_col=(node.end_col_offset or 0) + 1 if span else None,
    )

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
    return rule.finding(
        message,
        path=source.path,
        line=node.lineno,
        col=node.col_offset + 1,
        end_line=node.end_lineno if span else None,
        end_col=(node.end_col_offset or 0) + 1 if span else None,
    )


_TEST_IMPORTS = ("pytest", "unittest")


def is_test_module(source: SourceFile, module: ast.Module) -> bool:
    """A test file: under a ``tests`` folder, named ``test_*.py``/``*_test.py``, importing
    pytest or unittest, or defining top-level ``test_*`` functions. What it writes is test
    data and what it needs (a GPU) is the thing under test."""
    parts = source.path.replace("\\", "/").split("/")
    name = parts[-1]
    if any(p in ("tests", "test") for p in parts[:-1]) or name == "conftest.py":
        return True
    if name.startswith("test_") or name.endswith("_test.py"):
        return True
    for statement in module.body:
        if isinstance(statement, ast.Import) and any(
            a.name.split(".")[0] in _TEST_IMPORTS for a in statement.names
        ):
            return True
        if isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] in (
            _TEST_IMPORTS
        ):
            return True
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            statement.name.startswith("test_")
        ):
            return True
    return False


def buffer_names(module: ast.Module) -> set[str]:
    """Names bound to an in-memory buffer (``buf = io.BytesIO()``): a save into one writes
    no file."""
    found: set[str] = set()
    for node in ast.walk(module):
        value = None
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            value, targets = node.value, list(node.targets)
        elif isinstance(node, ast.withitem):
            value, targets = node.context_expr, [node.optional_vars] if node.optional_vars else []
        if isinstance(value, ast.Call) and call_name(value).endswith("BytesIO"):
            found.update(ast.unparse(t) for t in targets)
    return found


def is_buffer(target: ast.expr, buffers: set[str]) -> bool:
    if isinstance(target, ast.Call) and call_name(target).endswith("BytesIO"):
        return True
    return ast.unparse(target) in buffers

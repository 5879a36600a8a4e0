"""Undefined-name reports (ruff F821) that cannot fail at run time, dropped before RC210
reports them: names used only under a Python 2 guard, names a loop binds after the use
(``if i: print(prev)`` then ``prev = x``: defined from the second pass on), and names in
code that follows a ``return``/``raise`` in the same block (it never runs)."""

from __future__ import annotations

import ast
from itertools import pairwise

from rentcheck.lint.python.syntax import module_of, parent
from rentcheck.lint.source import SourceFile
from rentcheck.model import Finding

__all__ = ["drop_unreachable_undefined"]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)


def _is_python2_test(test: ast.expr) -> bool:
    """``sys.version_info[0] == 2``, ``sys.version_info < (3,)``, ``six.PY2``, ``PY2``."""
    written = ast.unparse(test).replace(" ", "")
    return (
        written in ("six.PY2", "PY2", "sys.version_info.major==2", "sys.version_info[0]==2")
        or written.startswith(("sys.version_info<(3", "sys.version_info[0]<3"))
        or written == "sys.version_info.major<3"
    )


def _is_python3_test(test: ast.expr) -> bool:
    written = ast.unparse(test).replace(" ", "")
    return written in ("six.PY3", "PY3", "sys.version_info[0]==3", "sys.version_info[0]>=3") or (
        written.startswith(("sys.version_info>=(3", "sys.version_info>(3"))
    )


def _under_python2_guard(node: ast.AST) -> bool:
    child, current = node, parent(node)
    while current is not None:
        if isinstance(current, ast.If):
            in_body = any(child is s for s in current.body)
            in_else = any(child is s for s in current.orelse)
            if (in_body and _is_python2_test(current.test)) or (
                in_else and _is_python3_test(current.test)
            ):
                return True
        if isinstance(current, ast.IfExp) and (
            (child is current.body and _is_python2_test(current.test))
            or (child is current.orelse and _is_python3_test(current.test))
        ):
            return True
        if isinstance(current, ast.BoolOp) and isinstance(current.op, ast.And):
            index = next((i for i, v in enumerate(current.values) if v is child), 0)
            if any(_is_python2_test(v) for v in current.values[:index]):
                return True
        child, current = current, parent(current)
    return False


_JUMPS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _after_a_jump(node: ast.AST) -> bool:
    """Whether a statement around ``node`` comes after a return/raise/continue/break in its
    own block: dead code."""
    child, current = node, parent(node)
    while current is not None:
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(current, field, None)
            if isinstance(block, list) and any(s is child for s in block):
                index = next(i for i, s in enumerate(block) if s is child)
                if any(isinstance(s, _JUMPS) for s in block[:index]):
                    return True
        if isinstance(current, _SCOPES):
            return False
        child, current = current, parent(current)
    return False


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Store)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    return False


def _path_to(node: ast.AST, top: ast.AST) -> list[ast.AST]:
    """``node`` and its ancestors up to (not including) ``top``, innermost first."""
    path = []
    current: ast.AST | None = node
    while current is not None and current is not top:
        path.append(current)
        current = parent(current)
    return path


def _exclusive(use: ast.AST, binding: ast.AST, loop: ast.AST) -> bool:
    """Whether the two sit in different branches of one ``if`` inside the loop: the binding
    then never runs in the pass that needs the name (a leftover from an earlier pass is a
    bug of its own)."""
    use_path = _path_to(use, loop)
    binding_path = _path_to(binding, loop)
    on_use_path = {id(n) for n in use_path}
    for below, node in pairwise(binding_path):
        if id(node) in on_use_path:
            if not isinstance(node, ast.If):
                return False
            use_below = use_path[[id(n) for n in use_path].index(id(node)) - 1]
            in_body = any(s is below for s in node.body)
            return in_body != any(s is use_below for s in node.body)
    return False


def _bound_by_enclosing_loop(node: ast.Name) -> bool:
    current = parent(node)
    while current is not None and not isinstance(current, _SCOPES):
        if isinstance(current, _LOOPS):
            loop = current
            if any(
                _binds(inner, node.id) and not _exclusive(node, inner, loop)
                for inner in ast.walk(loop)
            ):
                return True
        current = parent(current)
    return False


def _name_at(module: ast.Module, line: int, col: int) -> ast.Name | None:
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Name)
            and node.lineno == line
            and node.col_offset + 1 == col
            and isinstance(node.ctx, ast.Load)
        ):
            return node
    return None


def drop_unreachable_undefined(source: SourceFile, findings: list[Finding]) -> list[Finding]:
    if not any(f.details.get("ruff_code") == "F821" for f in findings):
        return findings
    module = module_of(source)
    if module is None:
        return findings
    kept = []
    for finding in findings:
        if finding.details.get("ruff_code") == "F821" and finding.line and finding.col:
            node = _name_at(module, finding.line, finding.col)
            if node is not None and (
                _under_python2_guard(node) or _bound_by_enclosing_loop(node) or _after_a_jump(node)
            ):
                continue
        kept.append(finding)
    return kept

"""The check behind RC206 on `ast`: a latest-checkpoint tracker opened for writing in place."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rentcheck.lint.python.checkpoint_rules import TRACKER_RULE
from rentcheck.lint.python.syntax import (
    call_name,
    enclosing_scopes,
    finding_at,
    is_test_module,
    module_of,
    walk_calls,
)
from rentcheck.lint.source import SourceFile
from rentcheck.model import Finding

__all__ = ["tracker_in_place"]

_ATOMIC_MOVES = (".replace", ".rename", "os.replace", "os.rename", "shutil.move")
# Names of checkpoint trackers (Megatron's tracker_filename, verl's
# latest_checkpointed_iteration.txt); a bare "tracker" is as often an experiment tracker's log.
_TRACKER_HINTS = (
    "latest_checkpoint",
    "checkpointed_iteration",
    "checkpoint_tracker",
    "tracker_filename",
    "tracker_file",
    "tracker_path",
)
# One-shot tools (converters, mergers) are rerun from scratch when killed.
_TOOL_PREFIXES = ("convert", "merge", "export")


def _is_tracker(path: ast.expr, scope: ast.AST) -> bool:
    written = ast.unparse(_resolved(path, scope))
    lowered = written.lower()
    if any(h in lowered for h in _TRACKER_HINTS):
        return True
    # DeepSpeed and Megatron-style trackers: a file named exactly `latest`.
    return any(
        isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.endswith("latest")
        and n.value.rsplit("/", 1)[-1] == "latest"
        for n in ast.walk(_resolved(path, scope))
    )


def _resolved(path: ast.expr, scope: ast.AST) -> ast.expr:
    """A name's value when the scope assigns it once (``tracker = os.path.join(…)``)."""
    if not isinstance(path, ast.Name):
        return path
    values = [
        node.value
        for node in ast.walk(scope)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == path.id for t in node.targets)
    ]
    return values[0] if len(values) == 1 else path


def _writes_in_place(call: ast.Call) -> ast.expr | None:
    """The path of ``open(path, 'w')`` / ``Path(path).write_text(…)``, else None."""
    name = call_name(call)
    if name in ("open", "io.open", "builtins.open") and call.args:
        mode = call.args[1] if len(call.args) > 1 else None
        mode = mode or next((k.value for k in call.keywords if k.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "w" in mode.value:
            return call.args[0]
        return None
    if name.endswith((".write_text", ".write_bytes")) and isinstance(call.func, ast.Attribute):
        return call.func.value
    return None


def _is_tool(source: SourceFile) -> bool:
    parts = source.path.replace("\\", "/").split("/")
    return any(p in ("tools", "scripts") for p in parts[:-1]) or parts[-1].startswith(
        _TOOL_PREFIXES
    )


def tracker_in_place(source: SourceFile) -> Iterator[Finding]:
    text = source.text
    if "latest" not in text and "tracker" not in text:
        return
    module = module_of(source)
    if module is None or is_test_module(source, module) or _is_tool(source):
        return
    for call in walk_calls(module):
        path = _writes_in_place(call)
        if path is None:
            continue
        scope = next(enclosing_scopes(call), module)
        if not _is_tracker(path, scope):
            continue
        if any(call_name(c).endswith(_ATOMIC_MOVES) for c in walk_calls(scope)):
            continue
        yield finding_at(
            TRACKER_RULE,
            source,
            call,
            f"the checkpoint tracker `{ast.unparse(path)}` is rewritten in place: a kill "
            "between open and write leaves it empty and the relaunch cannot find the latest "
            "checkpoint; write a temp file and os.replace it",
            span=False,
        )

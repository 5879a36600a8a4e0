"""The checks behind RC201, RC203 and RC205 on `ast`, imported on the first Python file."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rentcheck.lint.python.checkpoint_rules import LOAD_RULE, NONATOMIC_RULE, RESUME_RULE
from rentcheck.lint.python.syntax import (
    call_name,
    enclosing_scopes,
    finding_at,
    has_main_guard,
    keyword,
    module_of,
    walk_calls,
)
from rentcheck.lint.source import SourceFile
from rentcheck.model import Finding

__all__ = ["load", "no_resume", "nonatomic"]


SAVERS = ("torch.save", "save_file", "safetensors.torch.save_file", "torch.jit.save")
ATOMIC_MOVES = (".replace", ".rename", "os.replace", "os.rename", "shutil.move", "os.link")
LOADERS = (
    "torch.load",
    "load_file",
    "load_state_dict",
    "from_pretrained",
    "safe_open",
    "load_checkpoint",
)
_BUFFER_HINTS = ("buf", "bytesio", "stream", "bio")


def _is_saver(call: ast.Call) -> bool:
    name = call_name(call)
    return name in SAVERS or name.endswith(".save_file")


def _target(call: ast.Call) -> ast.expr | None:
    if len(call.args) >= 2:
        return call.args[1]
    return keyword(call, "f") or keyword(call, "filename")


def nonatomic(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None:
        return
    for call in walk_calls(module):
        if not _is_saver(call):
            continue
        target = _target(call)
        if target is None or any(h in ast.unparse(target).lower() for h in _BUFFER_HINTS):
            continue
        scope = next(enclosing_scopes(call), module)
        if any(call_name(c).endswith(ATOMIC_MOVES) for c in walk_calls(scope)):
            continue
        yield finding_at(
            NONATOMIC_RULE,
            source,
            call,
            f"`{call_name(call)}(…, {ast.unparse(target)})` writes the final path in place: a "
            "kill mid-save leaves a truncated checkpoint; save to a temp file, then os.replace",
        )


def load(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None:
        return
    for call in walk_calls(module):
        if call_name(call) not in ("torch.load", "load") or (
            call_name(call) == "load" and "from torch import" not in source.text
        ):
            continue
        value = keyword(call, "weights_only")
        if isinstance(value, ast.Constant) and value.value is True:
            continue
        said = "weights_only=False" if isinstance(value, ast.Constant) else "no weights_only=True"
        yield finding_at(
            LOAD_RULE,
            source,
            call,
            f"`torch.load` with {said} unpickles arbitrary objects (code execution on "
            "untrusted files); pass weights_only=True",
        )


def no_resume(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or not (has_main_guard(module) or "argparse" in source.text):
        return
    calls = list(walk_calls(module))
    saves = [c for c in calls if _is_saver(c) or call_name(c).endswith("save_checkpoint")]
    loads = [c for c in calls if call_name(c).endswith(LOADERS) or "resume" in call_name(c)]
    if saves and not loads:
        yield finding_at(
            RESUME_RULE,
            source,
            saves[0],
            "this entrypoint saves checkpoints but never loads one: a relaunch starts from "
            "step 0; load the latest checkpoint on startup",
        )

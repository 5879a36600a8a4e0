"""The checks behind RC201, RC203 and RC205 on `ast`, imported on the first Python file."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rentcheck.lint.python.checkpoint_rules import LOAD_RULE, NONATOMIC_RULE, RESUME_RULE
from rentcheck.lint.python.syntax import (
    buffer_names,
    call_name,
    enclosing_scopes,
    finding_at,
    has_main_guard,
    is_buffer,
    is_test_module,
    keyword,
    module_of,
    parent,
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
_TEMPORARY_HINTS = ("tmp_path", "tmpdir", "tempfile", "mkdtemp", "temporarydirectory")
# A checkpoint committed as a whole directory: the files are written in place, then a marker
# (or a tracker naming the directory) is written after them, and resume reads only committed
# directories, so a file cut off mid-save is never loaded.
_COMMIT_MARKERS = (
    "mark_checkpoint_complete",
    "checkpoint_complete",
    "mark_complete",
    "commit_checkpoint",
    "latest_checkpointed_iteration",
    '".complete"',
    "'.complete'",
    '"COMPLETE"',
    '"_SUCCESS"',
)
_STEP_PARAMETERS = ("step", "global_step", "iteration", "iter", "epoch", "tag", "ckpt_id")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _is_saver(call: ast.Call) -> bool:
    name = call_name(call)
    return name in SAVERS or name.endswith(".save_file")


def _target(call: ast.Call) -> ast.expr | None:
    if len(call.args) >= 2:
        return call.args[1]
    return keyword(call, "f") or keyword(call, "filename")


def _parameters(function: ast.AST) -> set[str]:
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return {a.arg for a in every}


def _in_loop(node: ast.AST, scope: ast.AST) -> bool:
    current = parent(node)
    while current is not None and current is not scope:
        if isinstance(current, _LOOPS):
            return True
        current = parent(current)
    return False


def _into_given_directory(call: ast.Call, target: ast.expr, scope: ast.AST) -> bool:
    """A saver called once per checkpoint, writing into a directory its caller chose for
    that step (``def save_checkpoint(self, local_path, global_step)``): the directory, not
    the file, is the unit the caller commits."""
    parameters = _parameters(scope)
    if not parameters.intersection(_STEP_PARAMETERS) or _in_loop(call, scope):
        return False
    if isinstance(target, ast.Name):
        if target.id in parameters:
            return False  # the file itself is what the caller passed
        target = _assigned_value(target.id, scope) or target
    return any(isinstance(n, ast.Name) and n.id in parameters for n in ast.walk(target))


def _assigned_value(name: str, scope: ast.AST) -> ast.expr | None:
    """What ``name = …`` binds in this scope (the first such assignment)."""
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
        ):
            return node.value
    return None


def nonatomic(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or is_test_module(source, module):
        return
    if any(marker in source.text for marker in _COMMIT_MARKERS):
        return
    buffers: set[str] | None = None
    for call in walk_calls(module):
        if not _is_saver(call):
            continue
        target = _target(call)
        if target is None:
            continue
        written = ast.unparse(target).lower()
        if any(h in written for h in (*_BUFFER_HINTS, *_TEMPORARY_HINTS)):
            continue
        if buffers is None:
            buffers = buffer_names(module)
        if is_buffer(target, buffers):
            continue
        scope = next(enclosing_scopes(call), module)
        if any(call_name(c).endswith(ATOMIC_MOVES) for c in walk_calls(scope)):
            continue
        if _into_given_directory(call, target, scope):
            continue
        yield finding_at(
            NONATOMIC_RULE,
            source,
            call,
            f"`{call_name(call)}(…, {ast.unparse(target)})` writes the final path in place: a "
            "kill mid-save leaves a truncated checkpoint; save to a temp file, then os.replace",
        )


# What a full training state holds that weights_only=True (torch >= 2.6 default) refuses: an
# argparse Namespace, numpy RNG state. Found in the text of a file that also calls torch.save.
_NOT_WEIGHTS = re.compile(
    r"(np|numpy)\.random\.get_state\(|\[['\"]args['\"]\]\s*=\s*(get_)?args\b|"
    r"['\"]args['\"]\s*:\s*(get_)?args\b"
)


def _full_state_saved(source: SourceFile) -> str | None:
    """What this file puts in its checkpoint that only a full unpickle reads back, if any."""
    if "torch.save" not in source.text:
        return None
    match = _NOT_WEIGHTS.search(source.text)
    if match is None:
        return None
    return "numpy RNG state" if "random" in match.group(0) else "args (a Namespace)"


def load(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None:
        return
    full_state: str | bool | None = False  # read on the first load without weights_only
    allowed = _safe_globals_lines(module)
    for call in walk_calls(module):
        if call_name(call) not in ("torch.load", "load") or (
            call_name(call) == "load" and "from torch import" not in source.text
        ):
            continue
        if call.lineno in allowed:
            continue  # inside `with torch.serialization.safe_globals([...])`: weights_only on
        if keyword(call, "weights_only") is not None or any(k.arg is None for k in call.keywords):
            continue  # said explicitly (or passed on in **kwargs): the caller chose
        if full_state is False:
            full_state = _full_state_saved(source)
        if full_state:
            message = (
                f"`torch.load` with no weights_only: this file saves {full_state} in its "
                "checkpoint, which torch >= 2.6 (weights_only=True by default) refuses: "
                "resume fails with UnpicklingError; pass weights_only=False for your own file"
            )
        else:
            message = (
                "`torch.load` with no weights_only: torch < 2.6 unpickles arbitrary objects "
                "(code execution on untrusted files), torch >= 2.6 refuses anything but "
                "tensors; pass weights_only=True (or =False for your own full-state file)"
            )
        yield finding_at(LOAD_RULE, source, call, message)


def _safe_globals_lines(module: ast.Module) -> set[int]:
    """Lines inside ``with torch.serialization.safe_globals([...]):`` blocks: there the load
    relies on weights_only=True (the default) and names the classes it lets through."""
    lines: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.With | ast.AsyncWith) and any(
            isinstance(item.context_expr, ast.Call)
            and call_name(item.context_expr).endswith("safe_globals")
            for item in node.items
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _trains(scope: ast.AST) -> bool:
    """Whether a loop in this scope runs training steps (calls ``train…``, ``.backward`` or
    ``.step``): a one-shot converter or exporter has none."""
    for loop in ast.walk(scope):
        if isinstance(loop, _LOOPS):
            for call in walk_calls(loop):
                last = call_name(call).rsplit(".", 1)[-1]
                if last.startswith("train") or last in ("backward", "step"):
                    return True
    return False


def _checkpoint_saves(module: ast.Module, calls: list[ast.Call]) -> list[ast.Call]:
    """Saves into a file made by a training loop, the ones that name a checkpoint first. A
    save into a buffer writes no checkpoint."""
    buffers = buffer_names(module)
    found = []
    for call in calls:
        if call_name(call).endswith("save_checkpoint"):
            found.append(call)
            continue
        if not _is_saver(call):
            continue
        target = _target(call)
        if target is not None and is_buffer(target, buffers):
            continue
        scope = next(enclosing_scopes(call), module)
        if _in_loop(call, scope) or _trains(scope):
            found.append(call)

    def names_a_checkpoint(call: ast.Call) -> bool:
        target = _target(call)
        written = ast.unparse(target).lower() if target is not None else ""
        return "ckpt" in written or "checkpoint" in written

    return sorted(found, key=lambda c: not names_a_checkpoint(c))


def no_resume(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or not (has_main_guard(module) or "argparse" in source.text):
        return
    if is_test_module(source, module):
        return
    calls = list(walk_calls(module))
    loads = [c for c in calls if call_name(c).endswith(LOADERS) or "resume" in call_name(c)]
    if loads:
        return
    saves = _checkpoint_saves(module, calls)
    if saves:
        yield finding_at(
            RESUME_RULE,
            source,
            saves[0],
            "this entrypoint saves checkpoints but never loads one: a relaunch starts from "
            "step 0; load the latest checkpoint on startup",
        )

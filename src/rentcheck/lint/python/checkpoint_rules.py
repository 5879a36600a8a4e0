"""RC201 nonatomic-torch-save, RC203 torch-load-without-weights-only, RC205 no-resume-on-startup."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rentcheck.lint.python.syntax import (
    call_name,
    enclosing_scopes,
    has_main_guard,
    keyword,
    module_of,
    python_check,
    walk_calls,
)
from rentcheck.lint.source import SourceFile
from rentcheck.model import Applicability, Finding, Rule, RuleStatus, Severity

NONATOMIC_RULE = Rule(
    code="RC201",
    name="nonatomic-torch-save",
    family="python",
    summary="Checkpoint saved straight onto its final path (no temp file + os.replace)",
    why=(
        "`torch.save(state, 'ckpt/last.pt')` truncates the old checkpoint first and writes "
        "the new one over several seconds. A preemption, an OOM kill or a full disk in that "
        "window leaves a half-written file under the final name, and the next start "
        "dutifully loads it: `PytorchStreamReader failed reading zip archive` or, worse, "
        "silently wrong weights, with the previous good checkpoint already gone."
    ),
    example_bad="torch.save(state, path)",
    example_good=(
        'tmp = f"{path}.tmp-{os.getpid()}"\ntorch.save(state, tmp)\n'
        "os.replace(tmp, path)  # atomic on POSIX; fsync the file and dir for durability"
    ),
    fix="Save to a temporary file in the same directory, then `os.replace(tmp, path)`.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

LOAD_RULE = Rule(
    code="RC203",
    name="torch-load-without-weights-only",
    family="python",
    summary="`torch.load` without `weights_only=True`",
    why=(
        "Without `weights_only=True`, `torch.load` unpickles arbitrary objects, which can run "
        "arbitrary code: a checkpoint pulled from a shared disk, a hub or another tenant's "
        "box is a program. Older torch versions (before 2.6) on the rented image default to "
        "the unsafe mode, so the same line is safe on your laptop and unsafe on the box."
    ),
    example_bad='state = torch.load("ckpt.pt")',
    example_good='state = torch.load("ckpt.pt", weights_only=True, map_location="cpu")',
    fix="Pass `weights_only=True` (store only tensors, numbers, strings, lists and dicts).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

RESUME_RULE = Rule(
    code="RC205",
    name="no-resume-on-startup",
    family="python",
    summary="Entrypoint saves checkpoints but never loads one",
    why=(
        "A training script that writes checkpoints but never reads them on start restarts "
        "from step 0 after every preemption, crash or relaunch: the checkpoints only cost "
        "disk and time. On spot or hourly boxes a restart is routine, so the entrypoint "
        "should always look for the latest valid checkpoint and continue from it."
    ),
    example_bad=(
        "def main():\n    for step in range(steps):\n        ...\n        torch.save(state, path)"
    ),
    example_good=(
        "def main():\n    state = load_latest(ckpt_dir)  # None on a fresh start\n"
        "    start = state['step'] + 1 if state else 0"
    ),
    fix="Load the newest valid checkpoint unconditionally at startup and continue from it.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
    status=RuleStatus.PREVIEW,
)

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


def _finding(rule: Rule, source: SourceFile, node: ast.expr, message: str) -> Finding:
    return Finding(
        code=rule.code,
        severity=rule.default_severity,
        message=message,
        path=source.path,
        line=node.lineno,
        col=node.col_offset + 1,
        end_line=node.end_lineno,
        end_col=(node.end_col_offset or 0) + 1,
    )


def _nonatomic(source: SourceFile) -> Iterator[Finding]:
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
        yield _finding(
            NONATOMIC_RULE,
            source,
            call,
            f"`{call_name(call)}(…, {ast.unparse(target)})` writes the final path in place: a "
            "kill mid-save leaves a truncated checkpoint; save to a temp file, then os.replace",
        )


def _load(source: SourceFile) -> Iterator[Finding]:
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
        yield _finding(
            LOAD_RULE,
            source,
            call,
            f"`torch.load` with {said} unpickles arbitrary objects (code execution on "
            "untrusted files); pass weights_only=True",
        )


def _no_resume(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or not (has_main_guard(module) or "argparse" in source.text):
        return
    calls = list(walk_calls(module))
    saves = [c for c in calls if _is_saver(c) or call_name(c).endswith("save_checkpoint")]
    loads = [c for c in calls if call_name(c).endswith(LOADERS) or "resume" in call_name(c)]
    if saves and not loads:
        yield _finding(
            RESUME_RULE,
            source,
            saves[0],
            "this entrypoint saves checkpoints but never loads one: a relaunch starts from "
            "step 0; load the latest checkpoint on startup",
        )


NONATOMIC = python_check(NONATOMIC_RULE, _nonatomic)
LOAD = python_check(LOAD_RULE, _load)
NO_RESUME = python_check(RESUME_RULE, _no_resume)

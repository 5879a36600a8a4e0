"""The checks behind RC202 and RC204 on `ast`, imported on the first Python file."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rentcheck.lint.python.device_rules import CUDA_RULE, MAIN_GUARD_RULE
from rentcheck.lint.python.syntax import (
    call_name,
    finding_at,
    has_main_guard,
    is_test_module,
    keyword,
    module_of,
    walk_calls,
)
from rentcheck.lint.source import SourceFile
from rentcheck.model import Finding

__all__ = ["cuda", "main_guard"]


_PROCESS_STARTERS = ("Process", "Pool", "spawn", "ProcessPoolExecutor", "start_processes")


def _module_level_calls(module: ast.Module) -> Iterator[ast.Call]:
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield from walk_calls(statement)


def _starts_workers(call: ast.Call) -> str | None:
    name = call_name(call)
    if name.split(".")[-1] == "DataLoader":
        workers = keyword(call, "num_workers")
        if workers is None or (isinstance(workers, ast.Constant) and workers.value in (0, None)):
            return None
        return f"DataLoader(num_workers={ast.unparse(workers)})"
    last = name.split(".")[-1]
    if last in _PROCESS_STARTERS and any(p in name for p in ("mp", "multiprocessing", "futures")):
        return name
    if name in ("Process", "Pool", "ProcessPoolExecutor"):
        return name
    return None


def main_guard(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or has_main_guard(module):
        return
    for call in _module_level_calls(module):
        what = _starts_workers(call)
        if what is None:
            continue
        yield finding_at(
            MAIN_GUARD_RULE,
            source,
            call,
            f'`{what}` at module level in a file with no `if __name__ == "__main__":` '
            "guard: spawned workers re-run this file; move it into main()",
            span=False,
        )


def _has_device_choice(module: ast.Module, text: str) -> bool:
    if "is_available" in text or "device_count" in text:
        return True
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Call)
            and call_name(node).endswith("add_argument")
            and any(isinstance(a, ast.Constant) and a.value == "--device" for a in node.args)
        ):
            return True
    return False


def _is_cuda_literal(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "cuda" or node.value.startswith("cuda:"))
    )


# Code whose subject is the GPU: kernels and their bindings, collective and GPU tests. A CPU
# smoke test of it has nothing to run.
_GPU_ONLY_IMPORTS = ("triton", "cupy", "pycuda", "numba.cuda", "torch.utils.cpp_extension")
_GPU_ONLY_FOLDERS = ("kernels", "fused_kernels", "csrc", "cuda")


def _gpu_only(source: SourceFile, module: ast.Module) -> bool:
    if is_test_module(source, module):
        return True
    folders = source.path.replace("\\", "/").split("/")[:-1]
    if any(f in _GPU_ONLY_FOLDERS for f in folders):
        return True
    for statement in module.body:
        names = []
        if isinstance(statement, ast.Import):
            names = [a.name for a in statement.names]
        elif isinstance(statement, ast.ImportFrom):
            names = [statement.module or ""]
        if any(n == g or n.startswith(g + ".") for n in names for g in _GPU_ONLY_IMPORTS):
            return True
    return False


def cuda(source: SourceFile) -> Iterator[Finding]:
    module = module_of(source)
    if module is None or "cuda" not in source.text or _has_device_choice(module, source.text):
        return
    if _gpu_only(source, module):
        return
    for call in walk_calls(module):
        name = call_name(call)
        hard = None
        if name.endswith(".cuda"):
            hard = ".cuda()"
        elif (
            name.endswith(("torch.device", ".to")) and call.args and _is_cuda_literal(call.args[0])
        ):
            hard = f"{name.split('.')[-1]}({ast.unparse(call.args[0])})"
        elif _is_cuda_literal(keyword(call, "device")):
            hard = f"device={ast.unparse(keyword(call, 'device'))}"  # type: ignore[arg-type]
        if hard is None:
            continue
        yield finding_at(
            CUDA_RULE,
            source,
            call,
            f"hard-coded `{hard}` with no `torch.cuda.is_available()` check or device "
            "option: the CPU smoke test cannot run this; pick the device once and pass it",
            span=False,
        )

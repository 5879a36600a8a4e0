"""The import layers, read from the source: nothing below the CLI imports ``commands/``,
command modules do not import each other, and module-level imports form no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "rentcheck"
ADAPTERS = ("rentcheck.cli", "rentcheck.__main__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:
            continue  # `if TYPE_CHECKING:` blocks never run
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("rentcheck")}


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_nothing_below_the_cli_imports_a_command_module() -> None:
    modules = _modules()
    offenders = []
    for name, path in modules.items():
        if name.startswith("rentcheck.commands") or name in ADAPTERS:
            continue
        for imported in _imports(path, top_level_only=False):
            if imported.startswith("rentcheck.commands"):
                offenders.append(f"{name} imports {imported}")
    assert offenders == []


def test_module_level_imports_form_no_cycle() -> None:
    modules = _modules()
    graph = {
        name: {
            target
            for imported in _imports(path, top_level_only=True)
            if (target := _resolve(imported, modules)) is not None and target != name
        }
        for name, path in modules.items()
    }
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :]
                if not all(n.startswith(nxt + ".") or n == nxt for n in cycle):
                    cycles.append([*cycle, nxt])
            elif state.get(nxt) is None:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node, [])
    assert cycles == []


def test_command_modules_do_not_import_each_other() -> None:
    """A command module registers its commands and calls the engine; what two commands
    share (flags, the emit path, the fleet table) lives in a helper module, not in another
    command's module."""
    from rentcheck.gates.table import command_modules

    registering = {f"rentcheck.commands.{name}" for name in command_modules()}
    modules = _modules()
    offenders = [
        f"{name} imports {target}"
        for name in sorted(registering)
        for imported in _imports(modules[name], top_level_only=False)
        if (target := _resolve(imported, modules)) in registering and target != name
    ]
    assert offenders == []

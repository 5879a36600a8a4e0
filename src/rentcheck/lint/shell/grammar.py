"""tree-sitter and its bash grammar (extra ``lint-shell``), loaded once per process on first use.

The two compiled modules are loaded straight from their packages' directories. The packages'
own ``__init__`` modules import ``typing`` and ``importlib.resources`` (with pathlib, tempfile,
shutil, lzma, ...) for names the rules never use: about 40 ms, a tenth of a cold run over a few
hundred scripts, paid again by every worker process. Where a package is laid out differently,
its ordinary import is used instead.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from types import ModuleType

    from tree_sitter import Language, Node, Parser, Query

__all__ = ["binding", "captures", "language", "parser", "query"]


def binding(package: str) -> ModuleType:
    """``package._binding``, the compiled half of a tree-sitter package, without running the
    package's ``__init__``. Registered under its own name, so a later ``import tree_sitter``
    reuses this module (and its types) rather than loading a second copy."""
    name = f"{package}._binding"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec, module_from_spec, spec_from_file_location

    spec = find_spec(package)  # finds a top-level package without importing it
    directories = spec.submodule_search_locations if spec is not None else None
    for directory in directories or ():
        for suffix in EXTENSION_SUFFIXES:
            path = os.path.join(directory, "_binding" + suffix)
            if not os.path.isfile(path):
                continue
            found = spec_from_file_location(name, path)
            if found is None or found.loader is None:
                break
            module = module_from_spec(found)
            sys.modules[name] = module
            try:
                found.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            return module
    from importlib import import_module

    return import_module(name)  # another layout: the package's own way


@lru_cache(maxsize=1)
def language() -> Language:
    grammar = binding("tree_sitter_bash")
    lang: Language = binding("tree_sitter").Language(grammar.language())
    return lang


@lru_cache(maxsize=1)
def parser() -> Parser:
    made: Parser = binding("tree_sitter").Parser(language())
    return made


@lru_cache(maxsize=4)
def query(source: str) -> Query:
    """A compiled query (milliseconds each: compile a pattern set once per process)."""
    compiled: Query = binding("tree_sitter").Query(language(), source)
    return compiled


def captures(compiled: Query, root: Node) -> dict[str, list[Node]]:
    """The nodes under ``root`` that ``compiled`` captures, by capture name."""
    found: dict[str, list[Node]] = binding("tree_sitter").QueryCursor(compiled).captures(root)
    return found

"""Turning a rule over a parsed script into a FileCheck, and findings at script positions."""

from __future__ import annotations

from functools import lru_cache

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Fix, Rule

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from rentcheck.lint.shell.tree import ShellScript

    # (line, col, message, details, fix)
    Hit = tuple[int, int, str, dict[str, Any], Fix | None]
    ScriptRule = Callable[[ShellScript], Iterable[Hit]]

__all__ = ["hit", "parsed_script", "shell_check", "tree_sitter_available"]


@lru_cache(maxsize=1)
def tree_sitter_available() -> bool:
    """Whether the parser (a core dependency) is installed, found without importing it: a run whose
    scripts are all cached never loads the parser (tens of milliseconds of start-up)."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) is not None for name in ("tree_sitter", "tree_sitter_bash"))
    except (ImportError, ValueError):  # a finder that refuses the name: not importable here
        return False


def _applies(source: SourceFile) -> bool:
    # Not "and the parser is installed": a missing parser is an error when a shell rule
    # first needs it (_script_of), never a silent pass of every tree rule.
    return source.kind is FileKind.SHELL and not source.truncated and not source.is_binary


_SHELL = frozenset({FileKind.SHELL})

# Where tree.script_of keeps a file's parse, shared by every shell rule of the run.
SCRIPT_MEMO_KEY = "shell"


@lru_cache(maxsize=1)
def _script_of() -> Callable[[SourceFile], ShellScript]:
    """``tree.script_of``, imported on first use rather than at the top: a run answered from
    the findings cache checks no script and never loads the parse-tree module. (Cached: an
    import statement in ``check`` would cost a microsecond per file and rule.)"""
    from rentcheck.errors import UsageError
    from rentcheck.lint.shell.tree import load_parser, script_of

    if not tree_sitter_available():
        raise UsageError(
            "the shell rules (RC104-RC119) need tree-sitter and tree-sitter-bash, which "
            "rentcheck depends on, and this environment lacks them",
            hint="reinstall rentcheck with its dependencies: pip install --force-reinstall "
            "rentcheck (or skip the tree rules: --ignore RC104,RC105,...)",
        )
    try:
        load_parser()
    except (ImportError, OSError, ValueError, AttributeError) as exc:
        # find_spec saw the packages, but they do not load, or lack what the rules use (a
        # broken install, or a tree-sitter older than 0.25).
        raise UsageError(
            f"tree-sitter-bash is installed but does not load ({type(exc).__name__}: {exc})",
            hint="reinstall it: pip install --force-reinstall tree-sitter tree-sitter-bash",
        ) from exc
    return script_of


def parsed_script(source: SourceFile) -> ShellScript:
    """The file's parse, shared by every rule that reads it (the first one parses)."""
    script: ShellScript | None = source.memo.get(SCRIPT_MEMO_KEY)
    return script if script is not None else _script_of()(source)


_parsed = parsed_script


def shell_check(rule: Rule, run: ScriptRule) -> FileCheck:
    def check(source: SourceFile) -> list[Finding]:
        return [
            rule.finding(
                message,
                path=source.path,
                line=line,
                col=col,
                details=details,
                fix=fix,
            )
            for line, col, message, details, fix in run(_parsed(source))
        ]

    return FileCheck(rule, _applies, check, content_only=True, kinds=_SHELL)


def hit(line: int, col: int, message: str, fix: Fix | None = None, **details: Any) -> Hit:
    return (line, col, message, details, fix)

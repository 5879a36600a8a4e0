"""A parsed shell script and the small vocabulary the rules are written in.

tree-sitter with the bash grammar (extra ``lint-shell``) parses into a concrete tree that keeps
working around syntax errors, so a rule still sees the parts that parsed. The parser is
imported on first use: a CRLF-only pre-commit run never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from rentcheck.lint.source import SourceFile

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["Command", "ShellScript", "script_of", "tree_sitter_available"]

# Commands whose string argument is itself a shell script run by another shell.
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_NESTING_DEPTH = 3
_BLOCKS = frozenset(
    {
        "program",
        "do_group",
        "compound_statement",
        "subshell",
        "if_statement",
        "elif_clause",
        "else_clause",
        "case_item",
        "function_definition",
    }
)


# The node types the rules look up; found by one tree-sitter query, in C, per script.
INDEXED_TYPES = (
    "command",
    "comment",
    "expansion",
    "variable_assignment",
    "declaration_command",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
)


@lru_cache(maxsize=1)
def _language() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language

    return Language(tree_sitter_bash.language())


@lru_cache(maxsize=1)
def _parser() -> Parser:
    from tree_sitter import Parser

    return Parser(_language())


@lru_cache(maxsize=1)
def _index_query() -> Any:
    from tree_sitter import Query

    return Query(_language(), " ".join(f"({t}) @{t}" for t in INDEXED_TYPES))


def _index(root: Node) -> dict[str, list[Node]]:
    from tree_sitter import QueryCursor

    captures: dict[str, list[Node]] = QueryCursor(_index_query()).captures(root)
    return {kind: sorted(nodes, key=lambda n: n.start_byte) for kind, nodes in captures.items()}


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def static_value(node: Node) -> str | None:
    """The word's value when it has no expansion in it ('a', "b", c\\ d, x'y'), else None."""
    kind = node.type
    if kind in ("word", "number"):
        raw = text(node)
        return re.sub(r"\\(.)", r"\1", raw) if "\\" in raw else raw
    if kind == "raw_string":
        return text(node)[1:-1]
    if kind == "ansi_c_string":
        return text(node)[2:-1]
    if kind == "string":
        parts = [c for c in node.children if c.type not in ('"',)]
        if all(c.type == "string_content" for c in parts):
            return "".join(text(c) for c in parts)
        return None
    if kind == "concatenation":
        values = [static_value(c) for c in node.children]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)
    return None


def loose_value(node: Node) -> str:
    """The word with quotes removed but expansions left as written: good enough to search."""
    value = static_value(node)
    if value is not None:
        return value
    raw = text(node)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


@dataclass
class Command:
    """One simple command: its name, argument nodes, env prefix and where it sits."""

    node: Node
    name: str
    args: list[Node]
    env: dict[str, str]
    script: ShellScript

    @cached_property
    def argv(self) -> list[str]:
        return [loose_value(a) for a in self.args]

    @property
    def line(self) -> int:
        return int(self.node.start_point[0]) + self.script.line_offset + 1

    @property
    def col(self) -> int:
        # Inside a nested command string, point at the command that carries the string.
        if self.script.outer is not None and self.node.start_point[0] == 0:
            return self.script.outer.col
        return int(self.node.start_point[1]) + 1

    def statement(self) -> Node:
        """The node that stands as one statement (the command with its redirects/pipes)."""
        return self._statement

    @cached_property
    def _statement(self) -> Node:
        node = self.node
        while node.parent is not None and node.parent.type in (
            "redirected_statement",
            "pipeline",
            "list",
            "negated_command",
        ):
            node = node.parent
        return node

    def redirects(self) -> list[str]:
        """Redirect texts that apply to this command (its own and its statement's)."""
        found: list[str] = []
        node: Node | None = self.node
        while node is not None and node.type != "program":
            if node.type in ("redirected_statement", "while_statement", "for_statement"):
                found.extend(
                    text(c)
                    for c in node.children
                    if c.type in ("file_redirect", "herestring_redirect", "heredoc_redirect")
                )
            if node.type in _BLOCKS:
                break
            node = node.parent
        return found

    def stdin_redirected(self) -> bool:
        return any(_is_stdin_redirect(r) for r in self.redirects()) or self.reads_pipe()

    def reads_pipe(self) -> bool:
        """Whether a pipe, not the script's stdin, feeds this command."""
        node = self.node
        while node.parent is not None and node.parent.type in ("redirected_statement",):
            node = node.parent
        parent = node.parent
        return parent is not None and parent.type == "pipeline" and parent.children[0] != node

    def backgrounded(self) -> bool:
        return self._backgrounded

    @cached_property
    def _backgrounded(self) -> bool:
        statement = self.statement()
        sibling = statement.next_sibling
        return sibling is not None and sibling.type == "&"

    def ancestors(self) -> Iterator[Node]:
        node = self.node.parent
        while node is not None:
            yield node
            node = node.parent


def _is_stdin_redirect(redirect: str) -> bool:
    # <file, <&-, <<<word, <<EOF and their explicit fd-0 forms all replace stdin.
    return redirect.replace(" ", "").startswith(("<", "0<"))


@dataclass
class ShellScript:
    """A parsed script, or a command string nested in one (``ssh host '...'``)."""

    source: SourceFile
    root: Node
    line_offset: int = 0
    outer: Command | None = None  # the command whose string argument this script is
    depth: int = 0
    _commands: list[Command] | None = field(default=None, repr=False)
    _by_type: dict[str, list[Node]] | None = field(default=None, repr=False)
    _nested: list[ShellScript] | None = field(default=None, repr=False)

    @property
    def partial(self) -> bool:
        return bool(self.root.has_error)

    def first_error_line(self) -> int:
        for node in self.walk():
            if node.is_error or node.is_missing:
                return int(node.start_point[0]) + self.line_offset + 1
        return self.line_offset + 1

    def walk(self, node: Node | None = None) -> Iterator[Node]:
        stack = [self.root if node is None else node]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(reversed(current.children))

    def of(self, *types: str) -> list[Node]:
        """Every node of these types, in document order. The tree is walked once per
        script: touching tree-sitter nodes from Python is what a lint run spends its time on."""
        if self._by_type is None:
            self._by_type = _index(self.root)
        # tree-sitter-bash parses `until` loops as while_statement: nothing else to find.
        types = tuple(t for t in types if t != "until_statement")
        missing = [t for t in types if t not in INDEXED_TYPES]
        if missing:  # a type nobody indexed: walk for it (slow path, kept correct)
            raise ValueError(f"node types not indexed: {missing}; add them to INDEXED_TYPES")
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        found = [n for t in types for n in self._by_type.get(t, [])]
        return sorted(found, key=lambda n: n.start_byte)

    def commands(self) -> list[Command]:
        if self._commands is None:
            self._commands = [self._command(n) for n in self.of("command")]
        return self._commands

    def _command(self, node: Node) -> Command:
        name = ""
        args: list[Node] = []
        env: dict[str, str] = {}
        seen_name = False
        for child in node.children:
            if child.type == "command_name":
                name = loose_value(child.children[0]) if child.children else text(child)
                seen_name = True
            elif not seen_name and child.type == "variable_assignment":
                key, _, value = text(child).partition("=")
                env[key] = value.strip("'\"")
            elif seen_name and child.type not in (
                "file_redirect",
                "herestring_redirect",
                "heredoc_redirect",
                "comment",
            ):
                args.append(child)
        return Command(node, name.rsplit("/", 1)[-1], args, env, self)

    def nested(self) -> list[ShellScript]:
        """Scripts carried as a single string argument: ssh, bash/sh -c, tmux, screen, su -c."""
        if self._nested is None:
            self._nested = []
            if self.depth < _NESTING_DEPTH:
                for command in self.commands():
                    for arg in _script_arguments(command):
                        inner = _parser().parse(loose_value(arg).encode())
                        line = int(arg.start_point[0]) + self.line_offset
                        self._nested.append(
                            ShellScript(self.source, inner.root_node, line, command, self.depth + 1)
                        )
        return self._nested

    def all_scripts(self) -> Iterator[ShellScript]:
        yield self
        for inner in self.nested():
            yield from inner.all_scripts()


_CARRIERS = frozenset(
    {"ssh", "nohup", "setsid", "timeout", "sudo", "exec", "tmux", "screen", "su", *_SHELLS}
)


def _script_arguments(command: Command) -> list[Node]:
    """The argument nodes that another shell will run as a script."""
    name = command.name
    if name not in _CARRIERS:
        return []  # most commands: decide before reading any argument
    argv = command.argv
    quoted = [a for a in command.args if a.type in ("raw_string", "string")]
    if name == "ssh":
        # The remote command: everything after the destination; a single quoted string is
        # the common case and the one whose contents we can read.
        return quoted[-1:] if quoted else []
    if name in _SHELLS and "-c" in argv:
        index = argv.index("-c") + 1
        return command.args[index : index + 1]
    wrapped_shell = argv and argv[0] in _SHELLS and "-c" in argv
    if name in ("nohup", "setsid", "timeout", "sudo", "exec") and wrapped_shell:
        index = argv.index("-c") + 1
        return command.args[index : index + 1]
    if name == "tmux" and argv and argv[0] in ("new-session", "new", "new-window", "neww"):
        return quoted[-1:]
    if name == "screen" and quoted:
        return quoted[-1:]
    if name == "su" and "-c" in argv:
        index = argv.index("-c") + 1
        return command.args[index : index + 1]
    return []


@lru_cache(maxsize=1)
def tree_sitter_available() -> bool:
    """Whether the ``lint-shell`` extra is installed, found without importing it: a run whose
    scripts are all cached never loads the parser (tens of milliseconds of start-up)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("tree_sitter", "tree_sitter_bash"))


def script_of(source: SourceFile) -> ShellScript:
    """The parse of ``source``, made once per file and shared by every shell rule."""
    memo: dict[str, Any] = source.memo
    if "shell" not in memo:
        memo["shell"] = ShellScript(source, _parser().parse(source.data).root_node)
    script: ShellScript = memo["shell"]
    return script

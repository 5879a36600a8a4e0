"""A parsed shell script and the small vocabulary the rules are written in.

tree-sitter with the bash grammar (extra ``lint-shell``) parses into a concrete tree that keeps
working around syntax errors, so a rule still sees the parts that parsed. The parser is
imported on first use: a CRLF-only pre-commit run never loads it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator
from functools import lru_cache
from itertools import chain
from operator import attrgetter

from rentcheck.lint.shell import grammar
from rentcheck.lint.shell.common import SCRIPT_MEMO_KEY
from rentcheck.lint.shell.words import loose_value, static_value, text
from rentcheck.lint.source import SourceFile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from tree_sitter import Node

__all__ = [
    "INDEX_QUERY",
    "Command",
    "ShellScript",
    "load_parser",
    "loose_value",
    "script_of",
    "static_value",
    "text",
]

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


# The node types the rules look up; found by one tree-sitter query, in C, per script. (A
# query of its own for a type few scripts need would visit the whole tree again, and compiling
# a query costs milliseconds: one query with every type costs least.)
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


# The `&` token that sends the statement before it to the background. Few scripts have any:
# knowing that, from the same query, answers Command.backgrounded() for all their commands.
_BACKGROUND_OPERATOR = "background_operator"


# One query with every indexed type, and `&` tokens: run once per script.
INDEX_QUERY = " ".join(f"({t}) @{t}" for t in INDEXED_TYPES) + f' "&" @{_BACKGROUND_OPERATOR}'


_START_BYTE = attrgetter("start_byte")  # a sort key without a Python call per node


def _captures(root: Node) -> dict[str, list[Node]]:
    """The indexed nodes by type, as the query found them (sorted when first asked for)."""
    return grammar.captures(grammar.query(INDEX_QUERY), root)


@lru_cache(maxsize=1)
def _name_field() -> int:
    field = grammar.language().field_id_for_name("name")
    if field is None:  # caught where the parser loads: a grammar this code does not know
        raise ValueError("the bash grammar has no `name` field for commands")
    return field


_NOT_ARGUMENTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect", "comment"})


def _is_quoted(written: str) -> bool:
    return "\\" in written or "'" in written or '"' in written


def _name_value(written: str, name_node: Node) -> str:
    """The command name as run: the word's value, without any directory."""
    name = written
    if _is_quoted(name):
        # Quotes or escapes: read the word's parse (`"$PY"`, 'ssh', py\thon).
        first = name_node.child(0)
        name = loose_value(first) if first is not None else name
    # Otherwise, as for nearly every name, the word as written is its value.
    return name.rsplit("/", 1)[-1] if "/" in name else name


class Command:
    """One simple command: its name and where it sits; its arguments, env prefix and
    statement are read from the tree on first use.

    Every rule looks at the name of every command, few look further: reading all of a
    node's children costs more than the rest of a typical rule. A plain class with slots,
    not ``functools.cached_property``, which takes a lock on each first access in 3.11.
    """

    __slots__ = ("_args", "_argv", "_backgrounded", "_env", "_statement", "name", "node", "script")

    def __init__(self, node: Node, name: str, script: ShellScript) -> None:
        self.node = node
        self.name = name
        self.script = script
        self._args: list[Node] | None = None
        self._env: dict[str, str] | None = None
        self._argv: list[str] | None = None
        self._statement: Node | None = None
        self._backgrounded: bool | None = None

    def __repr__(self) -> str:
        return f"Command(name={self.name!r}, line={self.line})"

    @property
    def args(self) -> list[Node]:
        """Argument nodes after the name, redirects and comments left out."""
        if self._args is None:
            self._args, self._env = self._read_children()
        return self._args

    @property
    def env(self) -> dict[str, str]:
        """The ``VAR=value`` prefix before the name."""
        if self._env is None:
            self._args, self._env = self._read_children()
        return self._env

    def _read_children(self) -> tuple[list[Node], dict[str, str]]:
        args: list[Node] = []
        env: dict[str, str] = {}
        seen_name = False
        for child in self.node.children:
            kind = child.type
            if kind == "command_name":
                seen_name = True
            elif not seen_name and kind == "variable_assignment":
                key, _, value = text(child).partition("=")
                env[key] = value.strip("'\"")
            elif seen_name and kind not in _NOT_ARGUMENTS:
                args.append(child)
        return args, env

    @property
    def argv(self) -> list[str]:
        if self._argv is None:
            self._argv = [loose_value(a) for a in self.args]
        return self._argv

    @property
    def line(self) -> int:
        return int(self.node.start_point[0]) + self.script.line_offset + 1

    @property
    def col(self) -> int:
        # Inside a nested command string, point at the command that carries the string (a
        # heredoc body starts a line of its own: its columns are the file's).
        outer = self.script.outer
        if outer is not None and not self.script.heredoc and self.node.start_point[0] == 0:
            return outer.col
        return int(self.node.start_point[1]) + 1

    def statement(self) -> Node:
        """The node that stands as one statement (the command with its redirects/pipes)."""
        if self._statement is None:
            node = self.node
            while node.parent is not None and node.parent.type in (
                "redirected_statement",
                "pipeline",
                "list",
                "negated_command",
            ):
                node = node.parent
            self._statement = node
        return self._statement

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

    def writes_pipe(self) -> bool:
        """Whether this command's stdout feeds a pipe (it is not a pipeline's last part)."""
        node = self.node
        while node.parent is not None and node.parent.type in ("redirected_statement",):
            node = node.parent
        parent = node.parent
        return parent is not None and parent.type == "pipeline" and parent.children[-1] != node

    def heredoc_body(self) -> Node | None:
        """The body of a heredoc that feeds this command's stdin (``cmd <<'EOF'``)."""
        parent = self.node.parent
        if parent is None or parent.type != "redirected_statement":
            return None
        for child in parent.children:
            if child.type == "heredoc_redirect":
                return next((c for c in child.children if c.type == "heredoc_body"), None)
        return None

    def backgrounded(self) -> bool:
        if self._backgrounded is None:
            # Without an `&` token in the script, skip the climb to the statement.
            if not self.script.has_background_operator():
                self._backgrounded = False
            else:
                sibling = self.statement().next_sibling
                self._backgrounded = sibling is not None and sibling.type == "&"
        return self._backgrounded

    def ancestors(self) -> Iterator[Node]:
        node = self.node.parent
        while node is not None:
            yield node
            node = node.parent


def _is_within(node: Node, ancestor: Node) -> bool:
    """Whether ``ancestor`` is ``node`` or above it in the tree."""
    current: Node | None = node
    while current is not None:
        if current == ancestor:
            return True
        current = current.parent
    return False


def _is_stdin_redirect(redirect: str) -> bool:
    # <file, <&-, <<<word, <<EOF and their explicit fd-0 forms all replace stdin.
    return redirect.replace(" ", "").startswith(("<", "0<"))


class _CommandIndex:
    """A script's commands: their nodes and names in document order, and where each name
    occurs. Rules ask for commands by name, and most names in a script are none of the
    ones a rule looks for, so a Command object is made only when asked for, and where a
    name occurs is looked up only for the names asked for."""

    __slots__ = ("found", "made", "name_set", "names", "nodes")

    def __init__(self, nodes: list[Node], data: bytes) -> None:
        self.nodes = nodes
        self.names = _names_of(nodes, data)
        self.name_set = set(self.names)
        self.found: dict[str, list[int]] = {}
        self.made: list[Command | None] = [None] * len(nodes)

    def positions(self, name: str) -> list[int]:
        """Where ``name`` occurs, in order (``list.index`` scans in C, between hits)."""
        places = self.found.get(name)
        if places is None:
            places = self.found[name] = []
            find, at = self.names.index, -1
            try:
                while True:
                    at = find(name, at + 1)
                    places.append(at)
            except ValueError:
                pass
        return places


def _names_of(nodes: list[Node], data: bytes) -> list[str]:
    """The name of each command node; ``data`` is the text the tree was parsed from."""
    name_field = _name_field()
    known: dict[bytes, str] = {}  # a script runs few distinct programs, most of them often
    names: list[str] = []
    for node in nodes:
        # The `name` field: one child fetched in C, where `node.children` makes them all;
        # its bytes cut from the text, where `node.text` builds a memoryview first.
        name_node = node.child_by_field_id(name_field)
        if name_node is None:
            names.append("")
            continue
        written = data[name_node.start_byte : name_node.end_byte]
        name = known.get(written)
        if name is None:
            word = written.decode("utf-8", "replace")
            name = _name_value(word, name_node)
            if not _is_quoted(word):  # a plain word's value depends on its bytes alone
                known[written] = name
        names.append(name)
    return names


class ShellScript:
    """A parsed script, or a command string nested in one (``ssh host '...'``)."""

    __slots__ = (
        "_all",
        "_commands",
        "_found_nodes",
        "_index",
        "_merged",
        "_nested",
        "_sorted",
        "data",
        "depth",
        "heredoc",
        "line_offset",
        "outer",
        "root",
        "source",
    )

    def __init__(
        self,
        source: SourceFile,
        root: Node,
        *,
        line_offset: int = 0,
        outer: Command | None = None,
        depth: int = 0,
        data: bytes | None = None,
        heredoc: bool = False,
    ) -> None:
        self.source = source
        self.heredoc = heredoc  # a heredoc body fed to a shell, not a string argument
        self.root = root
        self.line_offset = line_offset
        self.outer = outer  # the command whose string argument this script is
        self.depth = depth
        self.data = data  # the text parsed, when not the source's (a nested script)
        self._found_nodes: dict[str, list[Node]] | None = None
        self._sorted: dict[str, list[Node]] = {}
        self._merged: dict[tuple[str, ...], list[Node]] = {}
        self._index: _CommandIndex | None = None
        self._commands: list[Command] | None = None
        self._nested: list[ShellScript] | None = None
        self._all: list[ShellScript] | None = None

    def __repr__(self) -> str:
        return f"ShellScript(path={self.source.path!r}, line_offset={self.line_offset})"

    @property
    def partial(self) -> bool:
        return bool(self.root.has_error)

    def first_error_line(self) -> int:
        # Document order, as walk() goes, but only into subtrees that hold an error: an
        # ERROR or MISSING node makes has_error true on every node above it.
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.is_error or node.is_missing:
                return int(node.start_point[0]) + self.line_offset + 1
            if node.has_error:
                stack.extend(reversed(node.children))
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
        # tree-sitter-bash parses `until` loops as while_statement: nothing else to find.
        types = tuple(t for t in types if t != "until_statement")
        missing = [t for t in types if t not in INDEXED_TYPES]
        if missing:
            raise ValueError(f"node types not indexed: {missing}; add them to INDEXED_TYPES")
        if len(types) == 1:
            return self._of_type(types[0])
        merged = self._merged.get(types)
        if merged is None:
            found = [n for t in types for n in self._of_type(t)]
            merged = self._merged[types] = sorted(found, key=_START_BYTE)
        return merged

    def within_any(self, node: Node, types: tuple[str, ...]) -> bool:
        """Whether a node of one of these (indexed) types is ``node`` or above it.

        A node lies inside the byte range of each node above it, so byte ranges rule out
        nearly every candidate; only a candidate whose range holds ``node`` needs the climb
        (``parent`` searches down from the root, one of the dearest calls there is)."""
        start, end = node.start_byte, node.end_byte
        return any(
            outer.start_byte <= start and end <= outer.end_byte and _is_within(node, outer)
            for outer in self.of(*types)
        )

    def _of_type(self, kind: str) -> list[Node]:
        # Sorted on first use: most types are never asked for in most scripts.
        nodes = self._sorted.get(kind)
        if nodes is None:
            nodes = self._sorted[kind] = sorted(self._found().get(kind, ()), key=_START_BYTE)
        return nodes

    def _found(self) -> dict[str, list[Node]]:
        if self._found_nodes is None:
            self._found_nodes = _captures(self.root)
        return self._found_nodes

    def has_background_operator(self) -> bool:
        """Whether an `&` token (not `&&`, `>&`, `&>`) occurs anywhere in this script."""
        return _BACKGROUND_OPERATOR in self._found()

    def _command_index(self) -> _CommandIndex:
        if self._index is None:
            data = self.source.data if self.data is None else self.data
            self._index = _CommandIndex(self.of("command"), data)
        return self._index

    def _command_at(self, position: int) -> Command:
        index = self._command_index()
        command = index.made[position]
        if command is None:
            command = Command(index.nodes[position], index.names[position], self)
            index.made[position] = command
        return command

    def commands(self) -> list[Command]:
        """Every command, in document order."""
        if self._commands is None:
            self._commands = [self._command_at(p) for p in range(len(self._command_index().nodes))]
        return self._commands

    def has_command(self, names: Collection[str]) -> bool:
        """Whether a command with one of these names occurs in this script."""
        return not self._command_index().name_set.isdisjoint(names)

    def commands_named(self, names: Collection[str]) -> list[Command]:
        """The commands with one of these names, in document order."""
        index = self._command_index()
        # A set intersection in C: most of the names asked for occur in few scripts.
        wanted = index.name_set.intersection(names)
        if not wanted:
            return []
        if len(wanted) == 1:
            positions = index.positions(wanted.pop())
        else:
            positions = sorted(chain.from_iterable(index.positions(n) for n in wanted))
        return [self._command_at(p) for p in positions]

    def commands_where(self, accepts: Callable[[str], bool]) -> list[Command]:
        """The commands whose name ``accepts`` takes, in document order (it is asked once
        per distinct name)."""
        return self.commands_named([n for n in self._command_index().name_set if accepts(n)])

    def commands_in(self, node: Node, names: Collection[str]) -> list[Command]:
        """The commands with one of these names inside ``node``, in document order.

        Found among the commands of those names by byte range rather than by walking the
        subtree (a walk touches every node from Python); each candidate's ancestry is then
        checked, so the answer is exactly that of a walk."""
        start, end = node.start_byte, node.end_byte
        return [
            command
            for command in self.commands_named(names)
            if start <= command.node.start_byte <= end and _is_within(command.node, node)
        ]

    def _command(self, node: Node) -> Command:
        """The Command of a command node met on a walk of this script's tree: the index's
        own (found by start byte), with the name it already read."""
        index = self._command_index()
        nodes = index.nodes
        position = bisect_left(nodes, node.start_byte, key=_START_BYTE)
        while position < len(nodes) and nodes[position].start_byte == node.start_byte:
            if nodes[position] == node:
                return self._command_at(position)
            position += 1
        raise ValueError(f"not a command of this script: {node!r}")

    def nested(self) -> list[ShellScript]:
        """Scripts carried as a single string argument (ssh, bash/sh -c, tmux, screen, su -c)
        or as a heredoc body fed to a shell (``ssh host bash -s <<'EOF'``, ``bash <<EOF``)."""
        if self._nested is None:
            self._nested = []
            if self.depth < _NESTING_DEPTH:
                for command in self.commands_named(_CARRIERS):
                    for arg in _script_arguments(command):
                        self._nested.append(self._nested_script(command, arg))
                    # The heredoc first: a parent's type, where the other question reads words.
                    body = command.heredoc_body()
                    if body is not None and _reads_script_on_stdin(command):
                        self._nested.append(self._heredoc_script(command, body))
        return self._nested

    def _heredoc_script(self, command: Command, body: Node) -> ShellScript:
        whole = self.source.data if self.data is None else self.data
        # From the start of the body's first line: the parser may start the body node after
        # leading blanks, and columns should be the file's.
        start = whole.rfind(b"\n", 0, body.start_byte) + 1
        data = whole[start : body.end_byte]
        line = int(body.start_point[0]) + self.line_offset
        root = grammar.parser().parse(data).root_node
        return ShellScript(
            self.source,
            root,
            line_offset=line,
            outer=command,
            depth=self.depth + 1,
            data=data,
            heredoc=True,
        )

    def _nested_script(self, command: Command, arg: Node) -> ShellScript:
        data = loose_value(arg).encode()
        line = int(arg.start_point[0]) + self.line_offset
        root = grammar.parser().parse(data).root_node
        return ShellScript(
            self.source, root, line_offset=line, outer=command, depth=self.depth + 1, data=data
        )

    def all_scripts(self) -> list[ShellScript]:
        """This script and those nested in it, depth first, in document order."""
        if self._all is None:
            scripts = [self]
            for inner in self.nested():
                scripts.extend(inner.all_scripts())
            self._all = scripts
        return self._all


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


def _reads_script_on_stdin(command: Command) -> bool:
    """Whether the command runs what arrives on its stdin as a shell script: a shell with no
    script argument (``bash``, ``bash -s ARG``, ``sudo bash -s``), or ssh with no remote
    command (a login shell) or a remote shell of that kind."""
    name, argv = command.name, command.argv
    if name == "ssh":
        from rentcheck.lint.shell.redirects import ssh_remote_words

        remote = " ".join(ssh_remote_words(command)).split()
        if not remote:
            return True
        name, argv = remote[0].rsplit("/", 1)[-1], remote[1:]
    if name == "sudo" and argv:
        name, argv = argv[0].rsplit("/", 1)[-1], argv[1:]
    if name not in _SHELLS or "-c" in argv:
        return False
    return not argv or argv[0].startswith("-")


def load_parser() -> None:
    """Load tree-sitter and the bash grammar, and compile the index query, now: a broken or
    mismatched install fails here, once, rather than inside a rule."""
    root = grammar.parser().parse(b"true &\n").root_node
    grammar.captures(grammar.query(INDEX_QUERY), root)  # QueryCursor: tree-sitter >= 0.25
    _name_field()


def script_of(source: SourceFile) -> ShellScript:
    """The parse of ``source``, made once per file and shared by every shell rule."""
    memo: dict[str, Any] = source.memo
    if SCRIPT_MEMO_KEY not in memo:
        memo[SCRIPT_MEMO_KEY] = ShellScript(source, grammar.parser().parse(source.data).root_node)
    script: ShellScript = memo[SCRIPT_MEMO_KEY]
    return script

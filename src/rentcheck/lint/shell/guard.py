"""RC116 unguarded-script-body (preview) and RC119 partially-parsed-script (note)."""

from __future__ import annotations

from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.programs import is_long_running, may_be_long_running
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, RuleStatus, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from tree_sitter import Node

    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import ShellScript

UNGUARDED_RULE = Rule(
    code="RC116",
    name="unguarded-script-body",
    family="shell",
    summary="Long-running script with more to read after its long command, and no wrapper",
    why=(
        "bash reads a script as it runs it, a few bytes at a time by offset. A tool that "
        "writes the file in place while it runs (`cp new.sh run.sh` onto it, `scp`, a `>` "
        "redirect, an editor that saves in place) makes the running bash continue from the "
        "same offset in the new text when the long command returns: half-commands, skipped "
        "lines, a `rm` that was never meant to run. (A git pull or an rsync replaces the "
        "file by rename: the running bash keeps the old one. Slurm runs a saved copy of an "
        "sbatch script. A long command that is the script's last statement leaves only "
        "trailing text to change: no finding.) Wrapping the body in a function called at "
        "the end, followed by `exit`, makes bash read the whole body before running any of it."
    ),
    example_bad=(
        '#!/usr/bin/env bash\nwhile true; do python train.py; sleep 60; done\nrm -rf "$TMP"'
    ),
    example_good=(
        "#!/usr/bin/env bash\nmain() {\n    while true; do python train.py; sleep 60; done\n"
        '    rm -rf "$TMP"\n}\nmain "$@"; exit'
    ),
    fix='Move the body into `main() { …; }` and end the file with `main "$@"; exit`.',
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
    status=RuleStatus.PREVIEW,
)

PARTIAL_RULE = Rule(
    code="RC119",
    name="partially-parsed-script",
    family="shell",
    summary="Parts of the script could not be parsed as bash; rules ran on the rest",
    why=(
        "The structure rules read a bash parse tree. Where the parser gives up (an unusual "
        "construct, a heredoc form it does not know, a file that is really Python behind an "
        "sh shebang) those lines are not checked, and a clean result says less than it "
        "seems. This note says where, so you can look there yourself or run `bash -n` on it."
    ),
    example_bad="#!/bin/sh\nimport sys   # Python behind a shell shebang",
    example_good="#!/usr/bin/env python3\nimport sys",
    fix="Check the reported line with `bash -n FILE`; fix the syntax or the shebang.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

_SKIP = ("comment", ";", "&", "\n")


def _first_word(node: Node) -> str:
    words = text(node).split()
    return words[0] if words else ""


def _function_bodies(statements: list[Node]) -> dict[str, Node]:
    found = {}
    for node in statements:
        if node.type == "function_definition":
            name = _first_word(node).removeprefix("function").strip() or text(node.children[1])
            found[name.split("(")[0]] = node
    return found


def _top_level(node: Node, root: Node) -> Node:
    while node.parent is not None and node.parent != root:
        node = node.parent
    return node


def _unguarded(script: ShellScript) -> Iterator[Hit]:
    if b"#SBATCH" in script.source.data:
        return  # Slurm runs a copy saved at submission: edits never reach the job
    long_commands = [c for c in script.commands_where(may_be_long_running) if is_long_running(c)]
    if not long_commands and not script.has_background_operator():
        return
    root = script.root
    statements = [c for c in root.children if c.type not in _SKIP]
    functions = _function_bodies(statements)
    # A function's long command runs where the function is called at top level.
    long_functions = {
        name
        for name, body in functions.items()
        if any(body.start_byte <= c.node.start_byte < body.end_byte for c in long_commands)
    }
    # The top-level statements that run a long command, or start one in the background.
    holders = {_top_level(c.node, root).start_byte for c in long_commands}
    if script.has_background_operator():
        holders.update(
            _top_level(c.node, root).start_byte for c in script.commands() if c.backgrounded()
        )
    first_long = next(
        (
            index
            for index, statement in enumerate(statements)
            if statement.type != "function_definition"
            and (
                statement.start_byte in holders
                or (
                    bool(long_functions)
                    and bool(long_functions.intersection(text(statement).replace(";", " ").split()))
                )
            )
        ),
        -1,
    )
    if first_long < 0:
        return
    # What the parser could not read (a trailing `\` at the end of the file) is no statement.
    after = [
        s for s in statements[first_long + 1 :] if s.type not in ("function_definition", "ERROR")
    ]
    if not after or all(_first_word(s) == "exit" for s in after):
        return  # bash has already read everything it will run
    line = int(statements[first_long].start_point[0]) + 1
    yield hit(
        1,
        1,
        f"the long-running command on line {line} is followed by more of the script, which "
        "bash reads only when it returns: a file written in place meanwhile (cp onto it, "
        'scp, an editor) changes what runs; wrap the body in main() and end with `main "$@"; '
        "exit`",
        long_command_line=line,
    )


def _only_a_trailing_continuation(script: ShellScript) -> bool:
    """A file whose last line ends in `\\` (bash joins it with nothing and runs the command);
    the parser stops there. Asked only of such files: it parses the file again without it."""
    data = script.source.data.rstrip()
    if script.outer is not None or not data.endswith(b"\\"):
        return False
    from rentcheck.lint.shell import grammar

    return not grammar.parser().parse(data[:-1] + b"\n").root_node.has_error


def _partial(script: ShellScript) -> Iterator[Hit]:
    if script.partial and not _only_a_trailing_continuation(script):
        yield hit(
            script.first_error_line(),
            1,
            "bash parser could not read this part of the script; structure rules skipped it "
            "(check it with `bash -n`)",
        )


UNGUARDED = shell_check(UNGUARDED_RULE, _unguarded)
PARTIAL = shell_check(PARTIAL_RULE, _partial)

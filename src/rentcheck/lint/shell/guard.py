"""RC116 unguarded-script-body (preview) and RC119 partially-parsed-script (note)."""

from __future__ import annotations

from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
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
    summary='Long-running script without a `main "$@"; exit` or `{ …; exit; }` wrapper',
    why=(
        "bash reads a script as it runs it, a few bytes at a time by offset. Editing a "
        "launcher while its loop is still going (a quick fix on the box, a git pull, an "
        "rsync of the repo) makes the running bash continue from the same offset in the new "
        "text: half-commands, skipped lines, a `rm` that was never meant to run. Wrapping "
        "the body in a function called at the end, followed by `exit`, makes bash read the "
        "whole body before running any of it."
    ),
    example_bad="#!/usr/bin/env bash\nwhile true; do python train.py; sleep 60; done",
    example_good=(
        "#!/usr/bin/env bash\nmain() {\n    while true; do python train.py; sleep 60; done\n}\n"
        'main "$@"; exit'
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

# A script worth guarding is one that is still running when someone edits it: it trains,
# waits, polls or syncs for a long time.
_LONG_RUNNING = frozenset(
    {
        "python",
        "python3",
        "torchrun",
        "accelerate",
        "deepspeed",
        "sleep",
        "wait",
        "rsync",
        "srun",
        "tail",
    }
)


def _first_word(node: Node) -> str:
    words = text(node).split()
    return words[0] if words else ""


def _guarded(script: ShellScript) -> bool:
    """Whether bash must read the whole file before running it: a final `{ …; exit; }`, or
    `main "$@"; exit` after the function definitions."""
    skip = ("comment", ";", "&", "\n")
    statements = [c for c in script.root.children if c.type not in skip]
    if not statements:
        return True
    last = statements[-1]
    if last.type == "compound_statement":
        inner = [c for c in last.children if c.type not in (*skip, "{", "}")]
        return bool(inner) and _first_word(inner[-1]) == "exit"
    # The function names last: reading every definition costs more than the checks before.
    if last.type == "list":
        words = text(last).replace(";", " ").split()
        return bool(words) and "exit" in words and words[0] in _function_names(statements)
    if _first_word(last) == "exit" and len(statements) >= 2:
        return _first_word(statements[-2]) in _function_names(statements)
    return False


def _function_names(statements: list[Node]) -> set[str]:
    functions = {
        _first_word(c).removeprefix("function").strip() or text(c.children[1])
        for c in statements
        if c.type == "function_definition"
    }
    return {name.split("(")[0] for name in functions}


def _unguarded(script: ShellScript) -> Iterator[Hit]:
    # Names first: a background `&` needs a climb up the tree for each command (and no
    # command runs in the background of a script without an `&` token).
    long_running = script.has_command(_LONG_RUNNING) or (
        script.has_background_operator() and any(c.backgrounded() for c in script.commands())
    )
    if long_running and not _guarded(script):
        yield hit(
            1,
            1,
            "long-running script is not wrapped: editing it while it runs changes what the "
            'running bash executes; wrap the body in main() and end with `main "$@"; exit`',
        )


def _partial(script: ShellScript) -> Iterator[Hit]:
    if script.partial:
        yield hit(
            script.first_error_line(),
            1,
            "bash parser could not read this part of the script; structure rules skipped it "
            "(check it with `bash -n`)",
        )


UNGUARDED = shell_check(UNGUARDED_RULE, _unguarded)
PARTIAL = shell_check(PARTIAL_RULE, _partial)

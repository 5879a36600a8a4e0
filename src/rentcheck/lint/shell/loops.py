"""Loops: RC112 loop-stdin-swallow and RC114 unbounded-wait-loop."""

from __future__ import annotations

from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from tree_sitter import Node

    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import ShellScript

SWALLOW_RULE = Rule(
    code="RC112",
    name="loop-stdin-swallow",
    family="shell",
    summary="`while read … < file` loop whose body runs a command that reads stdin",
    why=(
        "In `while read host; do ssh $host …; done < hosts.txt` the loop's input is also the "
        "stdin of everything inside it. ssh (and bash, python, ffmpeg, docker exec -i) reads "
        "it, swallows the rest of the file, and the loop ends after the first line: one box "
        "gets checked or launched, the others silently do not."
    ),
    example_bad='while read -r host; do ssh "$host" nvidia-smi; done < hosts.txt',
    example_good='while read -r host; do ssh -n "$host" nvidia-smi; done < hosts.txt',
    fix="Give the inner command its own stdin: `ssh -n`, or `cmd < /dev/null`.",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.ERROR,
)

UNBOUNDED_RULE = Rule(
    code="RC114",
    name="unbounded-wait-loop",
    family="shell",
    summary="Poll loop with no counter, deadline or timeout",
    why=(
        "`until [ -f done.flag ]; do sleep 60; done` waits forever when the flag never comes: "
        "the job crashed, the path is wrong, the disk filled. On a rented box forever is paid "
        "by the hour, and the watcher that should have raised the alarm is the thing stuck. "
        "Every wait needs a bound: a tries counter, a deadline, or `timeout`."
    ),
    example_bad="while true; do\n    [ -f done.flag ] && break\n    sleep 60\ndone",
    example_good=(
        "deadline=$((SECONDS + 6*3600))\nuntil [ -f done.flag ]; do\n"
        "    (( SECONDS < deadline )) || { echo 'gave up' >&2; exit 1; }\n    sleep 60\ndone"
    ),
    fix="Bound the loop: count tries, compare `$SECONDS` with a deadline, or wrap it in `timeout`.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

STDIN_READERS = frozenset(
    {
        "ssh",
        "bash",
        "sh",
        "zsh",
        "python",
        "python3",
        "ffmpeg",
        "mysql",
        "psql",
        "docker",
        "kubectl",
        "gcloud",
        "scp",
        "sudo",
        "read",
    }
)
# `read` is what a `while read` loop is meant to run on its input.
_LOOP_INPUT_READERS = STDIN_READERS - {"read"}
_LOOPS = ("while_statement", "until_statement")


def _has_short_flag(arg: str, flag: str) -> bool:
    return arg.startswith("-") and not arg.startswith("--") and flag in arg[1:]


def _loop_redirected_input(loop: Node) -> bool:
    node = loop
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement":
        return any(
            c.type in ("file_redirect", "herestring_redirect") and text(c).lstrip().startswith("<")
            for c in parent.children
        )
    return parent is not None and parent.type == "pipeline" and parent.children[0] != node


def _swallow_hits(script: ShellScript) -> Iterator[Hit]:
    for command in script.commands_named(_LOOP_INPUT_READERS):
        # Inside a loop at all first: by byte ranges, where the checks below climb the tree.
        if not script.within_any(command.node, ("while_statement",)):
            continue
        if command.stdin_redirected():
            continue
        if command.name == "ssh" and any(_has_short_flag(a, "n") for a in command.argv):
            continue
        loop = next((a for a in command.ancestors() if a.type in _LOOPS), None)
        if loop is None or not _loop_redirected_input(loop):
            continue
        condition = loop.children[1] if len(loop.children) > 1 else None
        if condition is None or "read" not in text(condition):
            continue
        yield hit(
            command.line,
            command.col,
            f"`{command.name}` inside a `while read` loop reads the loop's input and swallows "
            "the remaining lines; give it `< /dev/null`"
            + (" (or `ssh -n`)" if command.name == "ssh" else ""),
            reader=command.name,
        )


def _bounded(loop: Node, script: ShellScript) -> bool:
    body = text(loop)
    if "SECONDS" in body or "date +%s" in body or ("$(date" in body and "%s" in body):
        return True
    for node in script.walk(loop):
        if node.type in ("arithmetic_expansion", "postfix_expression") or (
            node.type == "compound_statement" and text(node).startswith("((")
        ):
            return True
        if node.type == "command":
            name = script._command(node).name
            if name in ("timeout", "let", "expr", "seq"):
                return True
    return False


def _is_poll(loop: Node, script: ShellScript) -> bool:
    return bool(script.commands_in(loop, ("sleep",)))


def _unbounded_hits(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        for node in current.of(*_LOOPS):
            # Whether it sleeps first: most loops do not, and that needs no walk of the body.
            if not _is_poll(node, current):
                continue
            condition = text(node.children[1]) if len(node.children) > 1 else ""
            if node.type == "while_statement" and "read" in condition.split():
                continue  # reading input ends with the input
            if _bounded(node, current):
                continue
            if current.commands_in(node, ("read", "select")):
                continue  # waits on a person at the keyboard, not on a condition
            if any(p.type in _LOOPS for p in _parents(node)):
                continue  # report the outermost loop only
            yield hit(
                int(node.start_point[0]) + current.line_offset + 1,
                int(node.start_point[1]) + 1,
                f"`{condition.strip()[:40] or node.type.split('_')[0]}` poll loop has no "
                "counter, deadline or timeout: it waits forever if the condition never comes",
            )


def _parents(node: Node) -> Iterator[Node]:
    current = node.parent
    while current is not None:
        yield current
        current = current.parent


SWALLOW = shell_check(SWALLOW_RULE, _swallow_hits)
UNBOUNDED = shell_check(UNBOUNDED_RULE, _unbounded_hits)

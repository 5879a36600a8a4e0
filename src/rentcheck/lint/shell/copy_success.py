"""RC104 unchecked-copy-success: "synced" printed after a copy whose failure was ignored."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import Command, ShellScript

RULE = Rule(
    code="RC104",
    name="unchecked-copy-success",
    family="shell",
    summary="Success is printed after a copy whose failure is ignored",
    why=(
        "`cp -r ckpt /mnt/backup 2>/dev/null; echo synced` prints `synced` whether or not a "
        "single byte was written: the disk was full, the mount was gone, the path was wrong. "
        "People (and agents) read that line as permission to release the box, and the only "
        "copy of the checkpoints goes with it. A success message must be conditional on the "
        "copy, and ideally on the destination actually existing."
    ),
    example_bad='cp -r ckpt /root/autodl-fs/ 2>/dev/null; echo "synced"',
    example_good=(
        "if cp -r ckpt /root/autodl-fs/ && [ -d /root/autodl-fs/ckpt ]; then\n"
        '    echo "synced"\nelse\n    echo "SYNC FAILED" >&2; exit 1\nfi'
    ),
    fix=(
        "Make the message depend on the copy: `cp … && echo synced`, or "
        "`if cp …; then echo synced; else exit 1; fi`; drop `|| true` and `2>/dev/null`."
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

COPIERS = frozenset({"cp", "mv", "rsync", "scp", "mkdir", "rclone", "gsutil", "aws", "ossutil"})
SUCCESS = re.compile(
    r"\b(synced|saved|uploaded|done|copied|backed[ -]?up|complete[d]?|finished|success(ful)?|"
    r"ok|transferred|pushed|archived)\b",
    re.IGNORECASE,
)
_ERREXIT = re.compile(r"^-[a-zA-Z]*e[a-zA-Z]*$")


def _errexit(script: ShellScript) -> bool:
    """Whether `set -e` (or -o errexit) is in force for the top-level statements."""
    for command in script.commands_named(("set",)):
        argv = command.argv
        if any(_ERREXIT.match(a) for a in argv) or ("-o" in argv and "errexit" in argv):
            return True
    return False


def _ignored_by(command: Command, errexit: bool) -> str | None:
    """Why a failure of this copy would go unnoticed, or None when something checks it."""
    node = command.node
    for parent in command.ancestors():
        if parent.type in ("if_statement", "while_statement", "until_statement"):
            condition = parent.children[1] if len(parent.children) > 1 else None
            if condition is not None and _contains(condition, node):
                return None
        if parent.type == "list":
            operators = [c.type for c in parent.children if c.type in ("&&", "||")]
            tail = text(parent).rsplit("||", 1)[-1].strip() if "||" in operators else ""
            if "||" in operators and tail in ("true", ":", "/bin/true"):
                return "`|| true` discards its exit status"
            if "&&" in operators or "||" in operators:
                return None  # chained to its outcome: someone looks at it
        if parent.type in ("program", "do_group", "compound_statement", "function_definition"):
            break
        node = parent
    if errexit:
        return None
    redirects = " ".join(command.redirects())
    if "2>/dev/null" in redirects.replace(" ", "") or "&>/dev/null" in redirects.replace(" ", ""):
        return "its errors go to /dev/null and nothing checks its exit status"
    return "nothing checks its exit status (no `set -e`, no `&&`, no `if`)"


def _contains(outer: object, inner: object) -> bool:
    node = inner
    while node is not None:
        if node == outer:
            return True
        node = node.parent  # type: ignore[attr-defined]
    return False


_MESSENGERS = ("echo", "printf", "logger")


def _messages_after(command: Command) -> Iterator[Command]:
    """The echo/printf/logger commands in the statements that follow the copy's statement in
    the same block."""
    statement = command.statement()
    sibling = statement.next_sibling
    script = command.script
    while sibling is not None:
        if sibling.type in ("command", "redirected_statement", "list", "pipeline"):
            yield from script.commands_in(sibling, _MESSENGERS)
        elif sibling.type in ("if_statement", "while_statement", "for_statement", "case_statement"):
            return  # control flow: whatever follows is no longer plainly "after the copy"
        sibling = sibling.next_sibling


def _run(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        copies = current.commands_named(COPIERS)
        if not copies:
            continue  # most scripts copy nothing: no need to look for `set -e`
        errexit = _errexit(current)
        for command in copies:
            if command.name == "aws" and "cp" not in command.argv:
                continue
            reason = _ignored_by(command, errexit)
            if reason is None:
                continue
            for later in _messages_after(command):
                said = " ".join(later.argv)
                match = SUCCESS.search(said)
                if match and "fail" not in said.lower() and "error" not in said.lower():
                    yield hit(
                        command.line,
                        command.col,
                        f"`{command.name}` can fail silently ({reason}), yet line {later.line} "
                        f"prints {match.group(0)!r}; make the message depend on the copy",
                        copy=command.name,
                        message_line=later.line,
                    )
                    break


CHECK = shell_check(RULE, _run)

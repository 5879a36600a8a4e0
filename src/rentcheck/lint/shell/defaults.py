"""RC111 empty-disables-default: `${VAR:-default}` where an empty VAR is meant to say "off"."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import ShellScript

RULE = Rule(
    code="RC111",
    name="empty-disables-default",
    family="shell",
    summary="`${VAR:-default}` for a variable whose empty value is meant to disable something",
    why=(
        "`:-` treats an empty value like an unset one. When a script documents `EVAL_EVERY= "
        '(empty disables eval)` or sets `RESUME_FROM=""` to mean off, `${EVAL_EVERY:-500}` '
        "quietly turns it back on with the default: the run evaluates, resumes or uploads "
        "when you asked it not to. `${VAR-default}` keeps an explicitly empty value."
    ),
    example_bad='# UPLOAD_TO: bucket; leave empty to disable uploads\nDEST="${UPLOAD_TO:-s3://team/ckpt}"',
    example_good='# UPLOAD_TO: bucket; leave empty to disable uploads\nDEST="${UPLOAD_TO-s3://team/ckpt}"',
    fix="Use `${VAR-default}` (no colon) so an empty value stays empty.",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

# "Empty means use the default" is exactly what `:-` does; only "empty means off" is a bug.
_OFF_WORDS = re.compile(
    r"\b(disable[sd]?|turns? (it )?off|switch(es)? off|no-?op|skips?|off)\b", re.I
)
# `""` and `''` have no word boundary before them after a space or `=`: only the words do.
_EMPTY_WORDS = re.compile(r"\b(empty|blank|unset)\b|\"\"|''", re.I)


# _OFF_WORDS cannot match without one of these (`turn off` and `switch off` both hold " off");
# `in` rules out most comments far faster than a case-blind regex (for ASCII text, where
# lower() and re agree on case).
_OFF_NEEDLES = ("disable", " off", "noop", "no-op", "skip")


def _says_empty_means_off(comment: str) -> bool:
    if comment.isascii():
        lowered = comment.lower()
        if not any(needle in lowered for needle in _OFF_NEEDLES):
            return False
    return bool(_OFF_WORDS.search(comment) and _EMPTY_WORDS.search(comment))


def _may_say_off(text: str) -> bool:
    """Whether some part of ``text`` (a comment in it) could say that empty means off."""
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(needle in lowered for needle in _OFF_NEEDLES)


def _off_comments(script: ShellScript) -> list[tuple[int, str]]:
    """(line, text) of the comments, and of the documentation lines (usage text, heredocs),
    that say an empty value switches something off."""
    found: list[tuple[int, str]] = []
    if not _may_say_off(script.source.text):
        return found  # no comment can say it: no need to find the comments
    comment_lines = set()
    for node in script.of("comment"):
        comment = text(node)
        comment_lines.add(node.start_point[0] + 1)
        if _says_empty_means_off(comment):
            found.append((node.start_point[0] + 1, comment))
    # A script's docs are often a usage text rather than comments: any line that says it.
    for number, line in enumerate(script.source.text.splitlines(), start=1):
        if number not in comment_lines and _says_empty_means_off(line):
            found.append((number, line))
    return found


def _empty_means_off(off_comments: list[tuple[int, str]], name: str, at: int) -> str | None:
    """Evidence that an empty NAME is meant to switch something off: a comment on the
    expansion's own line that says empty disables, or a comment or documentation line that
    names the variable and says so."""
    if len(name) < 2 or name.isdigit():
        return None  # positional parameters: no documentation to go by
    mention = re.compile(rf"\b{re.escape(name)}\b")
    for line, comment in off_comments:
        if line == at and comment.lstrip().startswith("#"):
            return "the comment on this line says an empty value means off"
        if mention.search(comment):
            return f"line {line} says an empty value means off"
    return None


def _run(script: ShellScript) -> Iterator[Hit]:
    if b":-" not in script.source.data:
        return  # the `:-` operator is written in the script's own bytes, or it is not there
    off_comments: list[tuple[int, str]] | None = None  # read on the first `:-` expansion
    data = script.source.data
    for node in script.of("expansion"):
        if data.find(b":-", node.start_byte, node.end_byte) == -1:
            continue  # in the bytes: cheaper than the text, and than the node's children
        expansion = text(node)
        children = node.children
        names = [c for c in children if c.type == "variable_name"]
        if not names or not any(c.type == ":-" for c in children):
            continue
        name = text(names[0])
        if expansion.endswith(":-}"):
            continue  # an empty default: empty in, empty out
        if off_comments is None:
            off_comments = _off_comments(script)
        if not off_comments:
            return  # no comment says empty means off: nothing to report in this script
        evidence = _empty_means_off(off_comments, name, int(node.start_point[0]) + 1)
        if evidence is None:
            continue
        default = expansion.split(":-", 1)[1][:-1]
        yield hit(
            int(node.start_point[0]) + 1,
            int(node.start_point[1]) + 1,
            f"${{{name}:-…}} replaces an empty {name} with the default, but {evidence}; "
            f"use ${{{name}-{default}}}",
            variable=name,
        )


CHECK = shell_check(RULE, _run)

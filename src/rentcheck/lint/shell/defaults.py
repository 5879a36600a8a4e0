"""RC111 empty-disables-default: `${VAR:-default}` where an empty VAR is meant to say "off"."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import Hit, hit, shell_check
from rentcheck.lint.shell.tree import ShellScript, text
from rentcheck.model import Applicability, Rule, Severity

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
_OFF_WORDS = re.compile(r"\b(disable[sd]?|turns? (it )?off|switch(es)? off|no-?op|skips?)\b", re.I)
_EMPTY_WORDS = re.compile(r"\b(empty|blank|unset|\"\"|'')", re.I)


def _empty_means_off(script: ShellScript, name: str) -> str | None:
    """Evidence that an empty NAME is meant to switch something off: a comment that names
    the variable and says empty disables, or an empty assignment commented that way."""
    if len(name) < 2 or name.isdigit():
        return None  # positional parameters: no documentation to go by
    mention = re.compile(rf"\b{re.escape(name)}\b")
    for node in script.of("comment"):
        comment = text(node)
        if mention.search(comment) and _OFF_WORDS.search(comment) and _EMPTY_WORDS.search(comment):
            return f"the comment on line {node.start_point[0] + 1} says an empty value means off"
    return None


def _run(script: ShellScript) -> Iterator[Hit]:
    for node in script.of("expansion"):
        children = node.children
        names = [c for c in children if c.type == "variable_name"]
        if not names or not any(c.type == ":-" for c in children):
            continue
        name = text(names[0])
        if text(node).endswith(":-}"):
            continue  # an empty default: empty in, empty out
        evidence = _empty_means_off(script, name)
        if evidence is None:
            continue
        default = text(node).split(":-", 1)[1][:-1]
        yield hit(
            int(node.start_point[0]) + 1,
            int(node.start_point[1]) + 1,
            f"${{{name}:-…}} replaces an empty {name} with the default, but {evidence}; "
            f"use ${{{name}-{default}}}",
            variable=name,
        )


CHECK = shell_check(RULE, _run)

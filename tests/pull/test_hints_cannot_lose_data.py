"""No fix text suggests deleting something that a meter stop would then lose (issue 28,
item 5): deleting a link that leads out of ROOT made the build pass and the meter stop then
destroyed its target. Every built-in rule's fix and every hint the manifest builder gives is
read; a word of deletion is allowed only where what goes holds no result (listed, with why).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rentcheck.registry import all_rules

DELETING = re.compile(
    r"(?<![-\w])(delete|deleting|remove|rm\s+-|unlink|wipe|purge|clean up)\b(?!-)", re.I
)

# Where deleting loses nothing a meter stop could take, and why.
ALLOWED_RULES = {
    "RC103": "the executable bit, not a file",
    "RC113": "a secret written into a script",
    "RC505": "an unverifiable entry (FIFO, device, bad name) in the local pulled directory",
    "RC510": "it says never to delete the unfinished write before the pull",
    "RC625": "the training script's start-up removing temp files of writers that died: "
    "never a finished checkpoint",
    "RC900": "an unused suppression directive in the project's own source",
}
ALLOWED_HINTS = {
    "is dangling": "a dangling link holds no bytes",
    "points to a special file": "a link to a device or FIFO holds no result",
    "is a device, FIFO or socket": "a device, FIFO or socket holds no result",
}


def test_no_rule_fix_suggests_deleting_a_result() -> None:
    offenders = {
        code: rule.fix
        for code, rule in all_rules(with_plugins=False).items()
        if DELETING.search(rule.fix or "") and code not in ALLOWED_RULES
    }
    assert offenders == {}


def _builder_hints() -> list[tuple[str, str]]:
    """(message, hint) of every BuildError the manifest builder raises."""
    from rentcheck.payload import manifest_builder

    tree = ast.parse(Path(manifest_builder.__file__).read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "BuildError":
            message, hint = (ast.unparse(arg) for arg in node.args[:2])
            found.append((message, hint))
    return found


@pytest.mark.parametrize("message, hint", _builder_hints())
def test_no_builder_hint_suggests_deleting_a_result(message: str, hint: str) -> None:
    if DELETING.search(hint):
        assert any(key in message for key in ALLOWED_HINTS), (message, hint)

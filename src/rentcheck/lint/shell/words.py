"""Reading shell words out of parse-tree nodes.

Kept apart from ``tree`` so that the rule modules can import these helpers without loading
the parser glue: a run whose scripts all come from the findings cache never needs it.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["loose_value", "static_value", "text"]

_ESCAPED = re.compile(r"\\(.)")


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def static_value(node: Node) -> str | None:
    """The word's value when it has no expansion in it ('a', "b", c\\ d, x'y'), else None."""
    kind = node.type
    if kind in ("word", "number"):
        raw = text(node)
        return _ESCAPED.sub(r"\1", raw) if "\\" in raw else raw
    if kind == "raw_string":
        return text(node)[1:-1]
    if kind == "ansi_c_string":
        return text(node)[2:-1]
    if kind == "string":
        parts = [c for c in node.children if c.type != '"']
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

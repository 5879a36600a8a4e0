"""Show text that rentcheck did not write (a box's paths, stderr, banners) without obeying it.

A rented box controls file names, process command lines, mount points and error text. Printed
raw, an ANSI/OSC sequence rewrites the user's terminal and a newline forges a line of our own
("All checks passed") in a CI log. ``sanitise`` turns every such character into a visible
escape: control characters (C0, DEL, C1), line and paragraph separators, the bidirectional
overrides that reorder what a reader sees, and lone surrogates (undecodable bytes). Everything
else, including non-ASCII letters, stays as it is.

This is the one path box text takes to a reader, and it always keeps the text on one line: a
caller that prints several lines gives each line on its own (a headline is a tuple of lines),
so a newline inside any of them can only have come from the box. Terminal formats, GitHub
annotations, SARIF messages and HTML cells all call it; JSON keeps the exact value, written
with every control and non-ASCII character as a ``\\uXXXX`` escape (``ensure_ascii``), so it is
one line too.
"""

from __future__ import annotations

import re

__all__ = ["sanitise"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
    "\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def sanitise(text: str) -> str:
    """``text`` on one line, every character that could act on a terminal or a log escaped."""
    return _UNSAFE.sub(_escape, text)

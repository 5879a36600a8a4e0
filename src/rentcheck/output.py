"""Where command output goes: stdout, or ``-o FILE`` written atomically; colour decisions."""

from __future__ import annotations

import os
import sys

from rentcheck.atomic import write_atomic

__all__ = ["emit", "use_color"]


def use_color(choice: str, stream_is_tty: bool) -> bool:
    """``--color`` first; then, for ``auto``, NO_COLOR (off) and FORCE_COLOR (on: CI logs
    that render ANSI) as no-color.org and force-color.org say, non-empty values only and
    NO_COLOR first, as CPython does; then whether the stream is a terminal."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_is_tty and os.environ.get("TERM") != "dumb"


def emit(text: str, output_file: str | None) -> None:
    if output_file:
        write_atomic(output_file, text.encode("utf-8"))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()

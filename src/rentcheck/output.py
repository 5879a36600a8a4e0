"""Where command output goes: stdout, or ``-o FILE`` written atomically; colour decisions."""

from __future__ import annotations

import os
import sys

from rentcheck.atomic import write_atomic

__all__ = ["emit", "use_color"]


def use_color(choice: str, stream_is_tty: bool) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return stream_is_tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def emit(text: str, output_file: str | None) -> None:
    if output_file:
        write_atomic(output_file, text.encode("utf-8"))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()

"""Terminal display width, so that columns stay aligned after Chinese text (关机 is 4 cells)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

__all__ = ["display_width", "ljust", "table"]


def display_width(text: str) -> int:
    """Cells ``text`` takes in a terminal: wide and full-width characters 2, combining 0."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` display cells (str.ljust counts characters)."""
    return text + " " * max(0, width - display_width(text))


def table(rows: Sequence[Sequence[str]], indent: str = "", gap: str = "  ") -> list[str]:
    """Rows as aligned lines (every column but the last padded to its widest cell)."""
    if not rows:
        return []
    columns = max(len(row) for row in rows)
    widths = [
        max((display_width(row[i]) for row in rows if i < len(row)), default=0)
        for i in range(columns)
    ]
    lines = []
    for row in rows:
        cells = [
            cell if i == len(row) - 1 else ljust(cell, widths[i]) for i, cell in enumerate(row)
        ]
        lines.append((indent + gap.join(cells)).rstrip())
    return lines

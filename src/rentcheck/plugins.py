"""Entry points of rentcheck's plugin groups (rule packs, gates), read cheaply.

importlib.metadata parses every installed distribution (~80 ms in a full environment);
reading only the ``entry_points.txt`` files that mention the group keeps a lint run's
start-up small. The first distribution on ``sys.path`` wins, as importlib.metadata does.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["entry_points"]


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` over ``sys.path``, sorted by name."""
    found: dict[str, EntryPoint] = {}
    for base in sys.path:
        try:
            entries = list(os.scandir(base or "."))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            if f"[{group}]" not in text:
                continue
            import configparser
            from importlib.metadata import EntryPoint  # 30 ms to import: only when needed

            parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
            parser.optionxform = str  # type: ignore[assignment,method-assign]
            try:
                parser.read_string(text)
            except configparser.Error:
                continue
            for name, value in parser.items(group):
                found.setdefault(name, EntryPoint(name=name, value=value, group=group))
    return [found[name] for name in sorted(found)]

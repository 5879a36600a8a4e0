"""Did the run write into the project tree? A before/after listing of (size, mtime) per file.

The run's working directory is a fresh temp dir; outputs belong there. Files the config
excludes (``.git``, ``.venv``, ``__pycache__`` ...) and editor state are not watched: Python's
bytecode caches are written next to the code on purpose. A file that another program changes
while the run is going is reported too: a snapshot cannot tell who wrote it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rentcheck.pathmatch import matches_any

__all__ = ["Snapshot", "changed_paths", "snapshot_tree"]

MAX_ENTRIES = 20_000
# Editors and tools write their state into a project at any time, not only during a run.
TOOL_STATE = (".idea", ".vscode", ".ipynb_checkpoints", ".DS_Store", "*.swp", "*~", ".coverage*")
Snapshot = dict[str, tuple[int, int]]


def snapshot_tree(root: str, excludes: Sequence[str], skip: Sequence[str] = ()) -> Snapshot | None:
    """Relative path -> (size, mtime_ns) of every file under ``root``; None when too large."""
    found: Snapshot = {}
    excludes = (*excludes, *TOOL_STATE)
    skip_abs = {os.path.abspath(s) for s in skip}
    for directory, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = [
            d
            for d in dirnames
            if not matches_any(rel_dir + d, excludes)
            and os.path.abspath(os.path.join(directory, d)) not in skip_abs
        ]
        for name in filenames:
            rel = rel_dir + name
            if matches_any(rel, excludes) or name.endswith((".pyc", ".pyo")):
                continue
            try:
                stat = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            found[rel] = (stat.st_size, stat.st_mtime_ns)
            if len(found) > MAX_ENTRIES:
                return None
    return found


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Files created, modified or deleted between two snapshots, sorted."""
    return sorted(
        {path for path, meta in after.items() if before.get(path) != meta}
        | (before.keys() - after.keys())
    )

"""A run's checkpoint directory, read from outside: which entries are checkpoints, which are
temp files, and the newest step that was durable when the run was killed.

Checkpoint names are learned from the uninterrupted reference run: every top-level entry it
left that has a number in its name (``ckpt-000008.pt``, ``checkpoint-500/``,
``epoch=0-step=8.ckpt``) gives a pattern with the digits blanked out; the step is the last number.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Listing",
    "checkpoint_patterns",
    "durable_step",
    "entry_of",
    "is_temp_name",
    "is_temp_path",
    "list_checkpoint_dir",
    "name_pattern",
    "step_of",
]

MAX_DEPTH = 3
# Not "any dot file": ``.metadata`` is torch.distributed.checkpoint's commit marker.
_TEMP = re.compile(
    r"(?i)(\.tmp|tmp[-_.]|^tmp|\.part$|\.partial$|\.incomplete$|\.inprogress$|~$|\.swp$)"
)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Listing:
    exists: bool
    entries: tuple[str, ...] = ()  # top-level names
    files: tuple[tuple[str, int], ...] = ()  # (relative path, size), up to MAX_DEPTH deep

    def to_dict(self) -> dict[str, object]:
        return {"exists": self.exists, "entries": list(self.entries)}


def list_checkpoint_dir(directory: str) -> Listing:
    if not os.path.isdir(directory):
        return Listing(exists=False)
    files: list[tuple[str, int]] = []
    for current, dirnames, filenames in os.walk(directory):
        rel = os.path.relpath(current, directory)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        if depth >= MAX_DEPTH:
            dirnames[:] = []
        for name in filenames:
            path = os.path.join(current, name)
            try:
                size = os.lstat(path).st_size
            except OSError:
                continue
            files.append((os.path.relpath(path, directory).replace(os.sep, "/"), size))
    return Listing(
        exists=True, entries=tuple(sorted(os.listdir(directory))), files=tuple(sorted(files))
    )


def is_temp_name(name: str) -> bool:
    return bool(_TEMP.search(name))


def is_temp_path(path: str) -> bool:
    """A temp name, or a file inside a temp directory (``tmp-checkpoint-8/model.safetensors``)."""
    parent, name = os.path.split(path.rstrip("/"))
    return is_temp_name(name) or is_temp_name(os.path.basename(parent))


def name_pattern(name: str) -> str:
    return _DIGITS.sub("#", name)


def step_of(name: str) -> int | None:
    numbers = _DIGITS.findall(name)
    return int(numbers[-1]) if numbers else None


def checkpoint_patterns(reference: Listing) -> frozenset[str]:
    return frozenset(
        name_pattern(name)
        for name in reference.entries
        if step_of(name) is not None and not is_temp_name(name)
    )


def durable_step(listing: Listing, patterns: Iterable[str], exclude: str | None = None) -> int:
    """The newest checkpoint step present under a final name (0 when there is none)."""
    wanted = set(patterns)
    steps = [
        step_of(name) or 0
        for name in listing.entries
        if name != exclude and not is_temp_name(name) and name_pattern(name) in wanted
    ]
    return max(steps, default=0)


def entry_of(path: str | None, directory: str) -> str | None:
    """The top-level entry of ``directory`` that holds ``path`` (None when outside it)."""
    if not path:
        return None
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(directory))
    if rel == "." or rel.startswith(".."):
        return None
    return rel.replace(os.sep, "/").split("/", 1)[0]


def temp_files(listing: Listing) -> list[str]:
    return [path for path, _ in listing.files if any(is_temp_name(p) for p in path.split("/"))]

"""List the pulled directory without opening anything that is not provably inside it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import NamedTuple

from rentcheck.errors import UsageError
from rentcheck.payload.manifest_builder import RESERVED_NAMES
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.rules import PATH_ESCAPES_ROOT, SPECIAL_FILE

__all__ = ["Found", "LocalFile", "iter_tree", "scan_tree"]


class LocalFile(NamedTuple):  # a tuple: made for every file, at a third of a dataclass's cost
    rel: str  # POSIX path relative to the root, as named on disk
    path: str  # what to open: the entry itself, or the in-root target of a symlink
    size: int
    mtime_ns: int
    dev: int
    ino: int
    via_symlink: bool = False


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


Found = LocalFile | tuple[str, Issue]  # a file to read, or (rel path, issue) for the rest
_Listing = list[tuple[str, str, "os.DirEntry[str]"]]


def scan_tree(root: str | os.PathLike[str]) -> tuple[dict[str, LocalFile], list[tuple[str, Issue]]]:
    """``iter_tree`` held whole: regular files keyed by rel path, and (rel path, issue)."""
    files: dict[str, LocalFile] = {}
    problems: list[tuple[str, Issue]] = []
    for item in iter_tree(root):
        if isinstance(item, LocalFile):
            files[item.rel] = item
        else:
            problems.append(item)
    return files, problems


def iter_tree(root: str | os.PathLike[str]) -> Iterator[Found]:
    """Regular files under ``root`` and (rel path, issue) for the rest, in sorted rel order.

    Directories are entered only when they are real directories. A symlink is followed only
    when its fully resolved target is a regular file inside the root; one that leaves the root
    is reported (RC504) and never opened. Devices, FIFOs, sockets, directory symlinks and names
    that are not UTF-8 are reported (RC505). Reserved top-level names are skipped.

    Each listing is sorted by name with ``/`` after directory names (as the box builder does),
    so the depth-first walk yields rel paths exactly in ``sorted()`` order, the roster's order:
    the verifier matches the two as they stream. Memory is one listing per level of the tree,
    whatever the file count; each file costs one ``lstat`` (from ``scandir``).
    """
    top = os.fspath(root)
    if not os.path.isdir(top):
        raise UsageError(f"{top!r} is not a directory", "pass the directory the pull wrote to")
    root_real = os.path.realpath(top)
    stack: list[_Listing] = []
    yield from _enter(top, "", stack)
    while stack:
        items = stack[-1]
        if not items:
            stack.pop()
            continue
        _, rel, entry = items.pop()
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            yield rel, Issue(SPECIAL_FILE, f"cannot stat: {exc.strerror}")
            continue
        if stat.S_ISREG(st.st_mode):
            yield LocalFile(rel, entry.path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
        elif stat.S_ISDIR(st.st_mode):
            yield from _enter(top, rel + "/", stack)
        elif stat.S_ISLNK(st.st_mode):
            yield _symlink(entry.path, rel, root_real)
        else:
            yield rel, Issue(SPECIAL_FILE, "device, FIFO or socket; not opened")


def _enter(top: str, prefix: str, stack: list[_Listing]) -> Iterator[tuple[str, Issue]]:
    """Push one directory's entries as (sort key, rel, entry), sorted descending (they are
    popped from the end); yield the names that are not UTF-8 and a listing that failed."""
    items: _Listing = []
    stack.append(items)
    try:
        with os.scandir(os.path.join(top, prefix) if prefix else top) as it:
            entries = list(it)
    except OSError as exc:
        yield prefix.rstrip("/") or ".", Issue(SPECIAL_FILE, f"cannot list: {exc}")
        return
    for entry in entries:
        name = entry.name
        if not name.isascii():
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                shown = os.fsencode(prefix + name).decode("utf-8", "backslashreplace")
                yield shown, Issue(SPECIAL_FILE, "name is not valid UTF-8")
                continue
        if not prefix and name in RESERVED_NAMES:
            continue
        key = name + "/" if entry.is_dir(follow_symlinks=False) else name
        items.append((key, prefix + name, entry))
    items.sort(reverse=True)


def _symlink(path: str, rel: str, root_real: str) -> Found:
    """The in-root regular file a symlink resolves to, or why it is not followed."""
    target = os.path.realpath(path)
    if not _inside(target, root_real):
        why = f"symlink resolves outside the root to {target!r}; not opened"
        return rel, Issue(PATH_ESCAPES_ROOT, why, {"target": target})
    try:
        tst = os.stat(target, follow_symlinks=False)
    except OSError:
        return rel, Issue(SPECIAL_FILE, "dangling symlink")
    if not stat.S_ISREG(tst.st_mode):
        kind = "a directory" if stat.S_ISDIR(tst.st_mode) else "a special file"
        return rel, Issue(SPECIAL_FILE, f"symlink to {kind}; not followed")
    return LocalFile(
        rel, target, tst.st_size, tst.st_mtime_ns, tst.st_dev, tst.st_ino, via_symlink=True
    )

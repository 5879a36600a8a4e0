"""List the pulled directory without opening anything that is not provably inside it."""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from rentcheck.errors import UsageError
from rentcheck.pull.formats.base import Issue
from rentcheck.pull.manifest_builder import RESERVED_NAMES
from rentcheck.pull.rules import PATH_ESCAPES_ROOT, SPECIAL_FILE

__all__ = ["LocalFile", "scan_tree"]


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


def scan_tree(root: str | os.PathLike[str]) -> tuple[dict[str, LocalFile], list[tuple[str, Issue]]]:
    """Regular files under ``root`` (keyed by rel path) and (rel path, issue) for the rest.

    Directories are entered only when they are real directories. A symlink is followed only
    when its fully resolved target is a regular file inside the root; one that leaves the root
    is reported (RC504) and never opened. Devices, FIFOs, sockets, directory symlinks and names
    that are not UTF-8 are reported (RC505). Reserved top-level names are skipped.
    """
    top = os.fspath(root)
    if not os.path.isdir(top):
        raise UsageError(f"{top!r} is not a directory", "pass the directory the pull wrote to")
    root_real = os.path.realpath(top)
    files: dict[str, LocalFile] = {}
    problems: list[tuple[str, Issue]] = []
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            with os.scandir(os.path.join(top, prefix) if prefix else top) as it:
                entries = list(it)
        except OSError as exc:
            problems.append((prefix.rstrip("/") or ".", Issue(SPECIAL_FILE, f"cannot list: {exc}")))
            continue
        for entry in entries:
            rel = prefix + entry.name
            if not rel.isascii():
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
                    problems.append((shown, Issue(SPECIAL_FILE, "name is not valid UTF-8")))
                    continue
            if not prefix and entry.name in RESERVED_NAMES:
                continue
            _visit(entry, rel, root_real, files=files, problems=problems, stack=stack)
    return files, problems


def _visit(
    entry: os.DirEntry[str],
    rel: str,
    root_real: str,
    *,
    files: dict[str, LocalFile],
    problems: list[tuple[str, Issue]],
    stack: list[str],
) -> None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        problems.append((rel, Issue(SPECIAL_FILE, f"cannot stat: {exc.strerror}")))
        return
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(entry.path)
        if not _inside(target, root_real):
            problems.append(
                (
                    rel,
                    Issue(
                        PATH_ESCAPES_ROOT,
                        f"symlink resolves outside the root to {target!r}; not opened",
                        {"target": target},
                    ),
                )
            )
            return
        try:
            tst = os.stat(target, follow_symlinks=False)
        except OSError:
            problems.append((rel, Issue(SPECIAL_FILE, "dangling symlink")))
            return
        if not stat.S_ISREG(tst.st_mode):
            kind = "a directory" if stat.S_ISDIR(tst.st_mode) else "a special file"
            problems.append((rel, Issue(SPECIAL_FILE, f"symlink to {kind}; not followed")))
            return
        files[rel] = LocalFile(
            rel, target, tst.st_size, tst.st_mtime_ns, tst.st_dev, tst.st_ino, via_symlink=True
        )
    elif stat.S_ISDIR(st.st_mode):
        stack.append(rel + "/")
    elif stat.S_ISREG(st.st_mode):
        files[rel] = LocalFile(rel, entry.path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
    else:
        problems.append((rel, Issue(SPECIAL_FILE, "device, FIFO or socket; not opened")))

"""The project's identity for the ledger: one digest over its files, and the file list.

The files are those git would show (tracked plus untracked-but-not-ignored, so a new module
counts before it is committed) inside a work tree, a directory walk outside one, less the
configured excludes and rentcheck's own ``.rentcheck/``. Each file counts by its content's
SHA-256; a file over ``CONTENT_LIMIT`` (a data file nobody ignored) counts by size and mtime,
so a status check never reads gigabytes. The per-file table of each recorded digest is kept
in ``.rentcheck/trees/`` so ``rentcheck status`` can say which files changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping

from rentcheck.config import Config
from rentcheck.pathmatch import matcher

__all__ = ["ProjectFiles", "changed_files", "project_files", "save_tree", "saved_tree"]

CONTENT_LIMIT = 16 * 1024 * 1024
_OWN = ".rentcheck"


class ProjectFiles:
    """The project's files and their identities, and the digest over all of them."""

    __slots__ = ("digest", "files", "root")

    def __init__(self, root: str, files: Mapping[str, str]) -> None:
        self.root = root
        self.files = dict(sorted(files.items()))
        blob = json.dumps(self.files, separators=(",", ":")).encode()
        self.digest = "sha256:" + hashlib.sha256(blob).hexdigest()


def project_files(config: Config) -> ProjectFiles:
    """Every file of the project at ``config.root``, with its content identity."""
    root = os.path.abspath(config.root)
    excluded = matcher(config.excludes)
    files: dict[str, str] = {}
    for rel in _listing(root, excluded):
        if rel == _OWN or rel.startswith(_OWN + "/") or excluded(rel):
            continue
        identity = _identity(os.path.join(root, rel))
        if identity is not None:
            files[rel] = identity
    return ProjectFiles(root, files)


def _listing(root: str, excluded: Callable[[str], bool]) -> list[str]:
    import subprocess

    proc = subprocess.run(
        ["git", "-C", root, "ls-files", "-z", "-c", "-o", "--exclude-standard", "--", "."],
        capture_output=True,
        check=False,
    )
    if proc.returncode == 0:
        return sorted({p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p})
    found: list[str] = []
    for directory, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        # Excluded directories (.venv, node_modules, ...) are not entered at all.
        dirs[:] = sorted(d for d in dirs if d not in (".git", _OWN) and not excluded(prefix + d))
        found.extend(prefix + name for name in names)
    return sorted(found)


def _identity(path: str) -> str | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None  # listed by git but deleted in the work tree: not part of it now
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    if not os.path.isfile(path):
        return None
    if info.st_size > CONTENT_LIMIT:
        return f"stat:{info.st_size}:{info.st_mtime_ns}"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    except OSError:
        return None
    return digest.hexdigest()


def _trees_dir(root: str) -> str:
    return os.path.join(root, _OWN, "trees")


def save_tree(project: ProjectFiles) -> None:
    """Keep the file table of ``project.digest`` (once per digest; written atomically)."""
    from rentcheck.atomic import write_atomic

    directory = _trees_dir(project.root)
    path = os.path.join(directory, project.digest.removeprefix("sha256:") + ".json")
    if os.path.exists(path):
        return
    os.makedirs(directory, exist_ok=True)
    write_atomic(path, json.dumps(project.files, separators=(",", ":")).encode())


def saved_tree(root: str, digest: str) -> dict[str, str] | None:
    path = os.path.join(_trees_dir(root), digest.removeprefix("sha256:") + ".json")
    try:
        with open(path, "rb") as handle:
            table = json.load(handle)
    except (OSError, ValueError):
        return None
    return table if isinstance(table, dict) else None


def changed_files(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """Paths added, removed or changed between two file tables, sorted."""
    return sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))

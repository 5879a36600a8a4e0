"""Which files a lint run looks at: ``git ls-files`` inside a work tree, a directory walk
outside one, and the configured excludes applied to every path, explicit ones included."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from rentcheck.errors import UsageError
from rentcheck.pathmatch import matcher
from rentcheck.record import record

__all__ = ["Candidate", "GitRepo", "collect"]


class GitRepo:
    """A git work tree; the index modes are read once, on first need."""

    __slots__ = ("_modes", "_trust_fs", "root")

    def __init__(self, root: str) -> None:
        self.root = root
        self._modes: dict[str, int] | None = None
        self._trust_fs: bool | None = None

    def __repr__(self) -> str:
        return f"GitRepo({self.root!r})"

    def _git(self, *args: str) -> bytes:
        import subprocess

        proc = subprocess.run(["git", "-C", self.root, *args], capture_output=True, check=False)
        return proc.stdout if proc.returncode == 0 else b""

    def ls_files(self, reldir: str) -> list[str]:
        out = self._git("ls-files", "-z", "-c", "-o", "--exclude-standard", "--", reldir or ".")
        return sorted({p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p})

    def index_mode(self, relpath: str) -> int | None:
        """The mode git records, used when ``core.fileMode=false`` makes ``st_mode`` a lie."""
        if self._trust_fs is None:
            self._trust_fs = self._git("config", "--bool", "core.fileMode").strip() != b"false"
        if self._trust_fs:
            return None
        if self._modes is None:
            self._modes = {}
            for entry in self._git("ls-files", "-s", "-z").split(b"\0"):
                meta, _, name = entry.partition(b"\t")
                if name:
                    self._modes[name.decode("utf-8", "surrogateescape")] = int(meta.split()[0], 8)
        return self._modes.get(relpath)


@record
class Candidate:
    path: str  # relative to the project root, or absolute when outside it
    abspath: str
    repo: GitRepo | None
    size: int = 0  # bytes, as the walk's lstat saw them (to hand out big files first)


class _Repos:
    """Find the work tree of a directory the way git does (the nearest ``.git`` above it),
    with a stat per directory instead of a ``git rev-parse`` process per directory."""

    def __init__(self) -> None:
        self._by_dir: dict[str, GitRepo | None] = {}
        self._by_root: dict[str, GitRepo] = {}

    def find(self, directory: str) -> GitRepo | None:
        if directory in self._by_dir:
            return self._by_dir[directory]
        repo: GitRepo | None
        if os.path.exists(os.path.join(directory, ".git")):
            repo = self._by_root.setdefault(directory, GitRepo(directory))
        else:
            parent = os.path.dirname(directory)
            repo = None if parent == directory else self.find(parent)
        self._by_dir[directory] = repo
        return repo


def _display(abspath: str, root: str) -> str:
    # A prefix test, not os.path.relpath: this runs once per file.
    prefix = root.rstrip(os.sep) + os.sep
    if abspath.startswith(prefix):
        return abspath[len(prefix) :].replace(os.sep, "/")
    return abspath


def _walk(directory: str, root: str, excludes: Sequence[str]) -> Iterable[str]:
    excluded = matcher(tuple(excludes))
    for current, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not excluded(d))
        for name in sorted(files):
            yield os.path.join(current, name)


def _regular_size(path: str) -> int | None:
    """The size of a regular file that is not a symlink (links may point anywhere, including
    out of the repo); None for anything else."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _expand(
    raw: str, root: str, excludes: Sequence[str], repos: _Repos, cwd: str
) -> Iterable[tuple[str, GitRepo | None, int]]:
    """The files one command-line path stands for, each with its work tree and size."""
    abspath = os.path.normpath(os.path.join(cwd, raw))  # os.path.abspath, minus a getcwd
    try:
        st = os.lstat(abspath)
    except OSError:
        raise UsageError(
            f"path {raw} does not exist", hint="check the spelling, or run from the repo root"
        ) from None
    if stat.S_ISREG(st.st_mode):  # the common case under pre-commit: one stat, no listing
        yield abspath, repos.find(os.path.dirname(abspath)), st.st_size
        return
    if not os.path.isdir(abspath):
        return  # a symlink or a device named explicitly: never followed
    repo = repos.find(abspath)
    if repo is None:
        for name in _walk(abspath, root, excludes):
            if (size := _regular_size(name)) is not None:
                yield name, None, size
        return
    reldir = os.path.relpath(abspath, repo.root)
    for rel in repo.ls_files("" if reldir == "." else reldir):
        name = os.path.join(repo.root, rel)
        if (size := _regular_size(name)) is not None:
            yield name, repo, size


def collect(paths: Sequence[str], root: str, excludes: Sequence[str]) -> list[Candidate]:
    """Every regular, non-excluded file under ``paths`` (default: the project root)."""
    repos = _Repos()
    found: dict[str, Candidate] = {}
    cwd = os.getcwd()
    excluded = matcher(tuple(excludes))
    for raw in paths or [root]:
        for name, repo, size in _expand(raw, root, excludes, repos, cwd):
            if name in found:
                continue
            display = _display(name, root)
            if not excluded(display.lstrip("/")):
                found[name] = Candidate(display, name, repo, size)
    return sorted(found.values(), key=lambda c: c.path)

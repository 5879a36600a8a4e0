"""Which files a lint run looks at: ``git ls-files`` inside a work tree, a directory walk
outside one, and the configured excludes applied to every path, explicit ones included."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rentcheck.errors import UsageError
from rentcheck.pathmatch import matches_any

__all__ = ["Candidate", "GitRepo", "collect"]


@dataclass
class GitRepo:
    root: str
    _modes: dict[str, int] | None = field(default=None, repr=False)
    _trust_fs: bool | None = field(default=None, repr=False)

    def _git(self, *args: str) -> bytes:
        proc = subprocess.run(
            ["git", "-C", self.root, *args], capture_output=True, check=False
        )
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


@dataclass(frozen=True)
class Candidate:
    path: str  # relative to the project root, or absolute when outside it
    abspath: str
    repo: GitRepo | None


class _Repos:
    """``git rev-parse`` once per directory, not once per file."""

    def __init__(self) -> None:
        self._by_dir: dict[str, GitRepo | None] = {}

    def find(self, directory: str) -> GitRepo | None:
        if directory not in self._by_dir:
            for known in {r.root: r for r in self._by_dir.values() if r}.values():
                if directory == known.root or directory.startswith(known.root + os.sep):
                    self._by_dir[directory] = known
                    break
            else:
                proc = subprocess.run(
                    ["git", "-C", directory, "rev-parse", "--show-toplevel"],
                    capture_output=True,
                    check=False,
                )
                top = os.path.realpath(proc.stdout.decode().strip()) if proc.returncode == 0 else ""
                self._by_dir[directory] = GitRepo(top) if top else None
        return self._by_dir[directory]


def _display(abspath: str, root: str) -> str:
    rel = os.path.relpath(abspath, root)
    return abspath if rel.startswith("..") else rel.replace(os.sep, "/")


def _walk(directory: str, root: str, excludes: Sequence[str]) -> Iterable[str]:
    for current, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not matches_any(d, excludes))
        for name in sorted(files):
            yield os.path.join(current, name)


def collect(paths: Sequence[str], root: str, excludes: Sequence[str]) -> list[Candidate]:
    """Every regular, non-excluded file under ``paths`` (default: the project root)."""
    repos = _Repos()
    found: dict[str, Candidate] = {}
    for raw in paths or [root]:
        abspath = os.path.realpath(raw)
        if not os.path.exists(abspath):
            raise UsageError(f"path {raw} does not exist", hint="check the spelling, or run from the repo root")
        is_dir = os.path.isdir(abspath)
        repo = repos.find(abspath if is_dir else os.path.dirname(abspath))
        if not is_dir:
            names: Iterable[str] = [abspath]
        elif repo is not None:
            reldir = os.path.relpath(abspath, repo.root)
            names = (os.path.join(repo.root, p) for p in repo.ls_files("" if reldir == "." else reldir))
        else:
            names = _walk(abspath, root, excludes)
        for name in names:
            if name in found or os.path.islink(name) or not os.path.isfile(name):
                continue
            display = _display(name, root)
            if matches_any(display.lstrip("/"), excludes):
                continue
            found[name] = Candidate(display, name, repo)
    return sorted(found.values(), key=lambda c: c.path)

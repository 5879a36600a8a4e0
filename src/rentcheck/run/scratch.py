"""A scratch copy of the project for one smoke or resume run, so the command runs as typed.

``python train.py --config configs/x.yaml`` needs the project around it: the copy holds the
project's files (``git ls-files`` with untracked, not-ignored ones; a walk minus the configured
excludes outside a work tree), big files and the paths named in ``link`` (data dirs, caches)
as symlinks to the originals, and the run starts at the same relative place as the person who
typed the command. Whatever the run writes lands in the copy, never in the user's tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rentcheck.errors import GateError
from rentcheck.pathmatch import matches_any
from rentcheck.run.process import Launch, cpu_env_block
from rentcheck.run.settings import RunSettings

__all__ = [
    "MAX_FILES",
    "Scratch",
    "launch_in",
    "new_scratch",
    "project_files",
    "refill_scratch",
    "remove_scratch",
    "scratch_copy",
    "start_dir",
]

MAX_FILES = 20_000
LINK_ABOVE_BYTES = 8 << 20  # bigger files (weights, data shards) are linked, not copied
# Never copied: the project's own environments and caches, and rentcheck's state.
_NEVER = (".git", ".venv", "venv", "__pycache__", ".rentcheck", ".mypy_cache", ".ruff_cache")


@dataclass(frozen=True)
class Scratch:
    root: str  # the copy's project root ({root} in the command)
    cwd: str  # where the run starts: the same place relative to the root as the user
    origin: str  # the user's project root
    origin_cwd: str  # where the user is, for the reproduce line


def _git_files(root: str) -> list[str] | None:
    try:
        proc = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "-c", "-o", "--exclude-standard", "--", "."],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return sorted({p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p})


def _walk_files(root: str, excludes: Sequence[str]) -> list[str]:
    found = []
    for directory, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d for d in dirnames if d not in _NEVER and not matches_any(rel_dir + d, excludes)
        )
        found += [
            rel_dir + name
            for name in sorted(filenames)
            if not matches_any(rel_dir + name, excludes)
        ]
        if len(found) > MAX_FILES:
            break
    return found


def project_files(root: str, excludes: Sequence[str]) -> list[str]:
    """The project's files, relative to ``root`` ('/'-separated)."""
    files = _git_files(root)
    if files is None:
        files = _walk_files(root, excludes)
    files = [f for f in files if not any(part in _NEVER for part in f.split("/")[:-1])]
    if len(files) > MAX_FILES:
        raise GateError(
            f"the project at {root} has more than {MAX_FILES} files to copy for the run",
            hint="run rentcheck from a git work tree (ignored files are not copied), or add "
            "`exclude` patterns for data and output directories and name them in `link`",
        )
    return files


def start_dir(origin: str, cwd: str) -> str:
    """Where the run starts, relative to the project root: the user's place when inside it."""
    rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(origin))
    return "." if rel == os.curdir or rel.startswith(os.pardir) else rel


def _place(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    try:
        size = os.stat(source).st_size
    except OSError:
        return  # listed by git but deleted since: the user's tree does not have it either
    if size > LINK_ABOVE_BYTES:
        os.symlink(source, target)
    else:
        shutil.copy2(source, target)


def scratch_copy(
    origin: str,
    dest: str,
    *,
    excludes: Sequence[str],
    links: Sequence[str] = (),
    cwd: str | None = None,
) -> Scratch:
    """Fill ``dest`` (an empty directory) with the project at ``origin``."""
    origin = os.path.abspath(origin)
    for rel in project_files(origin, excludes):
        _place(os.path.join(origin, rel), os.path.join(dest, rel))
    for rel in links:
        source = os.path.join(origin, rel)
        target = os.path.join(dest, rel)
        if os.path.lexists(target):
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.unlink(target)
        os.makedirs(os.path.dirname(target) or dest, exist_ok=True)
        os.symlink(os.path.realpath(source), target)
    here = os.path.abspath(cwd or os.getcwd())
    rel_cwd = start_dir(origin, here)
    run_cwd = os.path.normpath(os.path.join(dest, rel_cwd))
    os.makedirs(run_cwd, exist_ok=True)
    return Scratch(
        root=dest,
        cwd=run_cwd,
        origin=origin,
        origin_cwd=os.path.normpath(os.path.join(origin, rel_cwd)),
    )


def new_scratch(settings: RunSettings, label: str, parent: str | None = None) -> Scratch:
    """A fresh temp dir holding a copy of the settings' project."""
    import tempfile

    base = tempfile.mkdtemp(prefix=f"rentcheck-{label}-", dir=parent)
    dest = os.path.join(base, os.path.basename(os.path.abspath(settings.root)) or "project")
    os.mkdir(dest)
    try:
        return scratch_copy(
            settings.root, dest, excludes=settings.excludes, links=settings.links, cwd=settings.cwd
        )
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise


def refill_scratch(settings: RunSettings, scratch: Scratch) -> None:
    """Empty ``scratch`` and copy the project into it again, at the same paths (a chain that
    starts over: a fork server warmed for that directory stays usable)."""
    shutil.rmtree(scratch.root, ignore_errors=True)
    os.mkdir(scratch.root)
    scratch_copy(
        settings.root, scratch.root, excludes=settings.excludes, links=settings.links,
        cwd=settings.cwd,
    )  # fmt: skip


def remove_scratch(scratch: Scratch) -> None:
    shutil.rmtree(os.path.dirname(scratch.root), ignore_errors=True)


def launch_in(
    settings: RunSettings,
    scratch: Scratch,
    *,
    name: str,
    state_dir: str,
    shim_settings: Mapping[str, str],
) -> Launch:
    """How a run of ``settings`` starts in ``scratch``: CPU env block, shim, PATH, cwd."""
    return Launch(
        argv=settings.argv_in(scratch.root),
        cwd=scratch.cwd,
        env={**cpu_env_block(settings.offline, scratch.cwd), **settings.env_in(scratch.root)},
        timeout=settings.timeout,
        shim=settings.shim != "off",
        shim_settings={**settings.shim_limits, **shim_settings},
        state_dir=state_dir,
        name=name,
        path_prefix=settings.interpreter.bin_dir or "",
        origin=(scratch.root, scratch.origin, scratch.origin_cwd),
    )

"""The files a profiles command looks at, and the findings the config tells it to drop."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rentcheck.config import Config
from rentcheck.errors import UsageError
from rentcheck.pathmatch import matches_any
from rentcheck.profiles.load import profile_dirs, profile_files

__all__ = ["display_path", "markdown_files", "own_profiles", "profile_targets"]


def display_path(path: str, root: str) -> str:
    """Relative to the project root when inside it, else absolute (e.g. installed profiles)."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _walk_markdown(directory: str, config: Config) -> list[str]:
    found = []
    for current, dirs, files in os.walk(directory):
        rel_dir = display_path(current, config.root)
        prefix = "" if rel_dir == "." else rel_dir.lstrip("/") + "/"
        dirs[:] = sorted(d for d in dirs if not matches_any(prefix + d, config.excludes))
        found += [os.path.join(current, f) for f in sorted(files) if f.endswith(".md")]
    return found


def markdown_files(paths: Sequence[str], config: Config) -> list[tuple[str, str]]:
    """(absolute path, display path) of every markdown file under ``paths``; a file named
    explicitly is read whatever its extension."""
    out: dict[str, str] = {}
    for given in paths:
        path = os.path.abspath(given)
        if os.path.isfile(path):
            out.setdefault(path, display_path(path, config.root))
        elif os.path.isdir(path):
            for found in _walk_markdown(path, config):
                out.setdefault(found, display_path(found, config.root))
        else:
            raise UsageError(f"{given}: no such file or directory", hint="check the path")
    return list(out.items())


def profile_targets(paths: Sequence[str], config: Config) -> list[tuple[str, str, bool]]:
    """(absolute path, display path, shipped) of the profiles to check: the files given (a
    directory means its profiles), or every profile directory in use."""
    shipped_dirs = {os.path.abspath(d) for d, shipped in profile_dirs(config) if shipped}
    chosen: list[str] = []
    if paths:
        for given in paths:
            path = os.path.abspath(given)
            if os.path.isdir(path):
                chosen += profile_files(path)
            elif os.path.isfile(path):
                if os.path.basename(path).lower() != "readme.md":
                    chosen.append(path)
            else:
                raise UsageError(f"{given}: no such file or directory", hint="check the path")
    else:
        for directory, _shipped in profile_dirs(config):
            chosen += profile_files(directory)
    unique = list(dict.fromkeys(chosen))
    return [
        (path, display_path(path, config.root), os.path.dirname(path) in shipped_dirs)
        for path in unique
    ]


def own_profiles(config: Config) -> list[tuple[str, str]]:
    """What ``rentcheck stale`` checks by default: the project's own profiles, in the
    directories of ``profiles.paths`` (empty when it lists none). A project answers for the
    freshness of the profiles it brings; the shipped ones are rentcheck's to keep fresh."""
    from rentcheck.profiles.load import user_profile_dirs

    dirs = user_profile_dirs(config)
    return [(path, display_path(path, config.root)) for d in dirs for path in profile_files(d)]

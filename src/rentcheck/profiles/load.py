"""Where profiles come from, and reading one into a Profile.

Shipped profiles live in the wheel at ``rentcheck/_profiles`` (in a source checkout: the
repository's ``profiles/``). A user adds directories with ``profiles.paths`` in the config;
a file there replaces the shipped profile of the same name as a whole, and earlier
directories win over later ones. ``README.md`` in a profiles directory is not a profile.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rentcheck.errors import FormatError, UsageError
from rentcheck.model import Finding
from rentcheck.profiles import rules
from rentcheck.profiles.document import MarkdownDoc, read_markdown
from rentcheck.profiles.model import Profile

if TYPE_CHECKING:
    from rentcheck.config import Config

__all__ = [
    "SECTION_KEYS",
    "ProfileEntry",
    "available_profiles",
    "load_profile",
    "profile_dirs",
    "profile_files",
    "profile_from_doc",
    "profiles_settings",
    "shipped_profiles_dir",
    "user_profile_dirs",
]

SECTION_KEYS = ("paths", "max-age-months", "warn-months", "dated-without-verified")
_NOT_PROFILES = ("readme.md",)


@dataclass(frozen=True)
class ProfileEntry:
    name: str
    path: str  # absolute
    shipped: bool
    shadows: str | None = None  # the shipped file this user profile replaces


def shipped_profiles_dir() -> str | None:
    """The profiles that ship with rentcheck: package data, or the checkout's ``profiles/``."""
    from importlib.resources import files

    packaged = files("rentcheck") / "_profiles"
    if packaged.is_dir():
        return str(packaged)
    checkout = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir, "profiles")
    checkout = os.path.normpath(checkout)
    return checkout if os.path.isdir(checkout) else None


def profiles_settings(config: Config) -> Mapping[str, Any]:
    from rentcheck.config import check_section_keys

    return check_section_keys(config, "profiles", SECTION_KEYS)


def user_profile_dirs(config: Config) -> list[str]:
    from rentcheck.config import section_error

    raw = profiles_settings(config).get("paths", [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise section_error(
            config, "profiles", "paths", "must be a list of directories", 'e.g. ["ops/profiles"]'
        )
    dirs = []
    for entry in raw:
        path = os.path.normpath(os.path.join(config.root, os.path.expanduser(entry)))
        if not os.path.isdir(path):
            raise section_error(
                config,
                "profiles",
                "paths",
                f"{entry!r} is not a directory ({path})",
                "create it, or fix the path (relative paths start at the config file's folder)",
            )
        dirs.append(path)
    return dirs


def profile_dirs(config: Config | None) -> list[tuple[str, bool]]:
    """(directory, shipped) pairs in precedence order: user directories first."""
    dirs = [(d, False) for d in (user_profile_dirs(config) if config is not None else [])]
    shipped = shipped_profiles_dir()
    if shipped is not None:
        dirs.append((shipped, True))
    return dirs


def profile_files(directory: str) -> list[str]:
    """The profile files of one directory, sorted."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [
        os.path.join(directory, name)
        for name in names
        if name.endswith(".md")
        and name.lower() not in _NOT_PROFILES
        and os.path.isfile(os.path.join(directory, name))
    ]


def available_profiles(config: Config | None) -> dict[str, ProfileEntry]:
    """Every profile name rentcheck can load, resolved through the override order."""
    found: dict[str, ProfileEntry] = {}
    for directory, shipped in profile_dirs(config):
        for path in profile_files(directory):
            name = os.path.basename(path)[: -len(".md")]
            if name in found:
                if shipped and found[name].shadows is None:
                    found[name] = ProfileEntry(name, found[name].path, False, shadows=path)
                continue
            found[name] = ProfileEntry(name, path, shipped)
    return dict(sorted(found.items()))


def load_profile(name: str, config: Config | None = None) -> Profile:
    """The profile ``name`` (user directories first, then shipped).

    Raises UsageError for a name no directory has, FormatError for an invalid profile.
    """
    entries = available_profiles(config)
    entry = entries.get(name)
    if entry is None:
        import difflib

        close = difflib.get_close_matches(name, list(entries), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(entries)
        raise UsageError(f"no platform profile named {name!r}", hint=hint)
    profile, problems = profile_from_doc(read_markdown(entry.path), entry.path, entry.shipped)
    if profile is None:
        first = problems[0] if problems else None
        detail = f": {first.message}" if first else ""
        raise FormatError(
            f"profile {entry.path} is invalid{detail}",
            hint=f"run `rentcheck profiles check {entry.path}`",
        )
    return profile


def profile_from_doc(
    doc: MarkdownDoc, abspath: str, shipped: bool = False
) -> tuple[Profile | None, list[Finding]]:
    """Validate the frontmatter; the Profile when valid, else None, with RC701 findings."""
    from rentcheck.profiles.frontmatter import parse_yaml
    from rentcheck.profiles.model import build_profile
    from rentcheck.profiles.validate import validate_frontmatter

    rule = rules.INVALID_FRONTMATTER

    def finding(message: str, line: int, **details: object) -> Finding:
        return rule.finding(message, path=doc.path, line=line, col=1, details=details)

    if doc.frontmatter is None:
        if doc.frontmatter_unclosed:
            return None, [finding("frontmatter is not closed: add a line '---' after it", 1)]
        return None, [finding("no YAML frontmatter: a profile starts with a line '---'", 1)]
    parsed = parse_yaml(doc.frontmatter)
    first = doc.frontmatter_line
    if parsed.error is not None:
        line = first + (parsed.error_line or 0)
        return None, [finding(f"frontmatter is not valid YAML: {parsed.error}", line)]
    findings = [
        finding(f"{'.'.join(map(str, path))}: key appears twice", first + line, key=list(path))
        for path, line in parsed.duplicates
    ]
    stem = os.path.basename(abspath)
    stem = stem[:-3] if stem.endswith(".md") else stem
    for problem in validate_frontmatter(parsed.data, stem):
        at = parsed.line_of(problem.path)
        findings.append(
            finding(
                f"{problem.where}: {problem.message}",
                first + (at or 0),
                key=problem.where,
                cross_field=problem.cross_field,
            )
        )
    if findings:
        return None, findings
    return build_profile(parsed.data, abspath, shipped), []

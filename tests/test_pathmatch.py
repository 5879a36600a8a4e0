"""Globs for exclude and per-file-ignores: component patterns, anchored patterns, and the
whole-path search used for speed agreeing with the part-by-part match it replaces."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rentcheck.pathmatch import _compile, matches_any

DEFAULTS = (".git", "node_modules", "__pycache__", "*.egg-info", "build", "dist")


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        ("src/build/x.sh", DEFAULTS, True),
        ("src/builder/x.sh", DEFAULTS, False),
        ("rentcheck.egg-info/PKG-INFO", DEFAULTS, True),
        ("a/b.egg-info", DEFAULTS, True),
        ("a/b.egg-infox", DEFAULTS, False),
        ("distance/run.sh", DEFAULTS, False),
        ("x/.git", DEFAULTS, True),
        ("scripts/run.sh", ("*.sh",), True),
        ("scripts/run.sh", ("scripts/*.sh",), True),
        ("other/scripts/run.sh", ("scripts/*.sh",), False),
        ("a/b/c/run.sh", ("a/**/run.sh",), True),
        ("a/run.sh", ("a/**/run.sh",), True),
        ("data/x.sh", ("dat?",), True),
        ("data/x.sh", ("d[!x]ta",), True),
        ("dxta/x.sh", ("d[!x]ta",), False),
        ("foo", ("foo**",), True),
        ("foo/bar", ("f**r",), False),
        ("a/x/b", ("a***b",), False),
        ("a/x/b", ("a****b",), False),
        ("axb", ("a***b",), True),
    ],
)
def test_examples(path: str, patterns: tuple[str, ...], expected: bool) -> None:
    assert matches_any(path, patterns) is expected


def _by_parts(path: str, patterns: tuple[str, ...]) -> bool:
    """The definition: some component matches some (component) pattern."""
    regexes = [_compile(p)[1] for p in patterns]
    return any(r.match(part) for part in path.split("/") for r in regexes)


_PART = st.text(alphabet="ab.*?-_", min_size=1, max_size=5)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.text(alphabet="ab.-_", min_size=1, max_size=5), min_size=1, max_size=5),
    patterns=st.lists(_PART.filter(lambda p: "/" not in p), min_size=1, max_size=4),
)
def test_whole_path_search_agrees_with_part_by_part_match(
    parts: list[str], patterns: list[str]
) -> None:
    path = "/".join(parts)
    assert matches_any(path, tuple(patterns)) is _by_parts(path, tuple(patterns)), (
        path,
        patterns,
        [re.escape(p) for p in patterns],
    )

"""Glob matching for ``exclude`` and ``per-file-ignores``, the way ruff users expect it.

A pattern without a slash matches any single path component (``build`` excludes every
``build/`` directory, ``*.ipynb`` every notebook); a pattern with a slash matches the whole
path relative to the project root, where ``**`` spans directories. ``{a,b}`` is either
alternative (``*.{sh,bash}``; nested braces too), as in shells and ruff; a leading ``./`` is
the project root itself (``./run.sh`` is ``run.sh``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

__all__ = ["matcher", "matches_any", "split_list"]


def _brace(glob: str, start: int) -> tuple[list[str], int] | None:
    """The top-level alternatives of the ``{...}`` opening at ``start`` and the index of its
    ``}``; None when it does not close or holds no comma (then it is literal text)."""
    depth, parts, begin = 0, [], start + 1
    for i in range(start, len(glob)):
        if glob[i] == "{":
            depth += 1
        elif glob[i] == "}":
            depth -= 1
            if depth == 0:
                parts.append(glob[begin:i])
                return (parts, i) if len(parts) > 1 else None
        elif glob[i] == "," and depth == 1:
            parts.append(glob[begin:i])
            begin = i + 1
    return None


def split_list(text: str) -> list[str]:
    """A comma-separated command-line list, commas inside ``{...}`` kept (``*.{sh,bash}``)."""
    parts, depth, begin = [], 0, 0
    for i, char in enumerate(text):
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == "," and not depth:
            parts.append(text[begin:i])
            begin = i + 1
    parts.append(text[begin:])
    return parts


def _translate(glob: str, *, cross_slash: bool) -> str:
    """Glob to regex: ``*``/``?`` stay inside one component unless ``cross_slash``."""
    star = ".*" if cross_slash else "[^/]*"
    one = "." if cross_slash else "[^/]"
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        brace = _brace(glob, i) if char == "{" else None
        if brace is not None:
            alternatives, close = brace
            inner = "|".join(_translate(a, cross_slash=cross_slash) for a in alternatives)
            out.append(f"(?:{inner})")
            i = close + 1
            continue
        if char == "*":
            out.append(star)
        elif char == "?":
            out.append(one)
        elif char == "[" and "]" in glob[i + 2 :]:
            close = glob.index("]", i + 2)
            body = glob[i + 1 : close]
            negate = body.startswith(("!", "^"))
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _source(pattern: str) -> tuple[bool, str]:
    """Whether the glob is anchored (has a slash), and its regex source."""
    while pattern.startswith("./"):  # the root itself: `./run.sh` is `run.sh`, anchored
        pattern = "/" + pattern[2:].lstrip("/")
    if "/" in pattern.rstrip("/"):
        return True, f"^{_translate(pattern.strip('/'), cross_slash=False)}(?:/.*)?$"
    return False, f"^{_translate(pattern.rstrip('/'), cross_slash=True)}$"


@lru_cache(maxsize=512)
def _compile(pattern: str) -> tuple[bool, re.Pattern[str]]:
    anchored, source = _source(pattern)
    return anchored, re.compile(source, re.DOTALL)


def _component_search(patterns: list[str]) -> re.Pattern[str] | None:
    """One regex that finds a path component matching any of ``patterns`` anywhere in a
    path, so a path is searched once instead of split and matched part by part. Only for
    patterns without brackets: a class like ``[!a]`` could match the ``/`` between parts."""
    if any("[" in p for p in patterns):
        return None
    # Within one component ``**`` means ``*``; neither may cross a slash here.
    bodies = [_translate(re.sub(r"\*+", "*", p.rstrip("/")), cross_slash=False) for p in patterns]
    return re.compile(f"(?:^|/)(?:{'|'.join(bodies)})(?:/|$)", re.DOTALL)


@lru_cache(maxsize=64)
def _compile_set(
    patterns: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None, re.Pattern[str] | None]:
    """The component patterns as one whole-path search (or, when that cannot be built, as
    one alternation matched part by part), and the anchored ones as one alternation.
    Compiled once per set: every run matches each file against its excludes."""
    component: list[str] = []
    plain: list[str] = []
    anchored: list[str] = []
    for pattern in patterns:
        is_anchored, source = _source(pattern)
        (anchored if is_anchored else component).append(f"(?:{source})")
        if not is_anchored:
            plain.append(pattern)
    search = _component_search(plain) if plain else None
    return (
        re.compile("|".join(component), re.DOTALL) if component and search is None else None,
        search,
        re.compile("|".join(anchored), re.DOTALL) if anchored else None,
    )


def matches_any(relpath: str, patterns: Iterable[str]) -> bool:
    """True when the POSIX ``relpath`` (relative to the project root) hits any pattern."""
    return matcher(tuple(patterns))(relpath)


@lru_cache(maxsize=64)
def matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """``matches_any`` for one fixed set of patterns, for callers that test many paths
    (every file of a run against its excludes): the set is looked up once, not per path."""
    component, search, anchored = _compile_set(patterns)

    def matches(relpath: str) -> bool:
        if anchored is not None and anchored.match(relpath):
            return True
        if search is not None:
            return search.search(relpath) is not None
        if component is not None:
            return any(component.match(part) for part in relpath.split("/"))
        return False

    return matches

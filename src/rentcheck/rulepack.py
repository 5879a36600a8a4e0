"""The public helpers a third-party rule pack is written with.

A rule pack is a distribution with an entry point in the group ``rentcheck.rules`` that loads to
an iterable of checks (or a zero-argument callable returning one). Each check pairs a ``Rule``
(the same metadata the built-in rules carry; its code uses a prefix the pack owns, e.g.
``SLR``) with what it applies to and a pure function from a ``SourceFile`` to findings::

    from rentcheck import Finding, Rule, file_rule

    CHECKS = [file_rule(MY_RULE, my_check, globs=("*.sbatch",), containing=b"#SBATCH")]

    # pyproject.toml of the pack
    [project.entry-points."rentcheck.rules"]
    slurm = "rentcheck_slurm:CHECKS"

A pack that fails to import, yields something that is not a check, or reuses a code prefix that
another pack or rentcheck owns is named in a warning and skipped; the run goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Rule
from rentcheck.pathmatch import matcher

__all__ = ["file_rule"]


def file_rule(
    rule: Rule,
    check: Callable[[SourceFile], Iterable[Finding]],
    *,
    globs: Iterable[str] = (),
    kinds: Iterable[FileKind] = (),
    containing: bytes | None = None,
) -> FileCheck:
    """A check of one file at a time. It applies to a text file whose project-relative path
    matches one of ``globs`` (gitignore-style: ``*.sbatch``, ``k8s/**/*.yaml``) or whose kind is
    one of ``kinds``, and, when ``containing`` is given, whose bytes include it. With neither
    globs nor kinds it applies to every text file that passes ``containing``."""
    patterns = tuple(globs)
    wanted = frozenset(kinds)
    path_hits = matcher(patterns) if patterns else None

    def applies(source: SourceFile) -> bool:
        if source.is_binary:
            return False
        if patterns or wanted:
            by_path = path_hits is not None and path_hits(source.path)
            if not by_path and source.kind not in wanted:
                return False
        return containing is None or containing in source.data

    return FileCheck(rule=rule, applies=applies, run=check, content_only=True)

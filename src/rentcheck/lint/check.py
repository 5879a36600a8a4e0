"""The two shapes a lint check takes: one file at a time, or one repository at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding, Rule
from rentcheck.record import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.cache import FindingsCache

__all__ = ["FileCheck", "Project", "ProjectCheck"]


@record
class Project:
    """A git work tree (``git_root`` set) or a plain directory, with the files checked in it."""

    root: str
    git_root: str | None
    files: Sequence[SourceFile]
    # The run's findings cache, for checks whose per-file results depend on content alone.
    cache: FindingsCache | None = None


@record
class FileCheck:
    """A pure check of one file; ``applies`` decides cheaply whether ``run`` is worth calling."""

    rule: Rule
    applies: Callable[[SourceFile], bool]
    run: Callable[[SourceFile], Iterable[Finding]]
    # True when the findings depend on the file's bytes alone (not its mode or neighbours),
    # so they may be cached by content hash.
    content_only: bool = False
    # The kinds of file the check can apply to (None: any); lets the engine skip ``applies``.
    kinds: frozenset[FileKind] | None = None


@record
class ProjectCheck:
    """A check that needs the whole repository (e.g. what ``.gitattributes`` covers).

    ``applies`` picks the files it looks at; ``run`` sees them together in a ``Project``.
    """

    rule: Rule
    applies: Callable[[SourceFile], bool]
    run: Callable[[Project], Iterable[Finding]]
    # True when ``run`` judges git work trees only (it gets no files from outside one).
    needs_git: bool = False

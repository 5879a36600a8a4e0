"""A file as the lint checks see it: relative path, bytes, effective mode, and what kind it is."""

from __future__ import annotations

import enum
import os
import stat

from rentcheck.record import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FileKind", "SourceFile", "classify", "interpreter_of"]

SHELL_INTERPRETERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".template")
MAX_TEXT_BYTES = 16 * 1024 * 1024  # a "script" bigger than this is data; do not slurp it
_BINARY_SNIFF = 8000


class FileKind(enum.Enum):
    SHELL = "shell"
    PYTHON = "python"
    MARKDOWN = "markdown"
    GITATTRIBUTES = "gitattributes"
    OTHER = "other"


def interpreter_of(first_line: bytes) -> str | None:
    """The program a ``#!`` line runs, as a bare name: ``#!/usr/bin/env -S bash -e`` -> bash."""
    if not first_line.startswith(b"#!"):
        return None
    words = first_line[2:].strip().split()
    if not words:
        return ""
    prog = os.path.basename(words[0]).decode("utf-8", "replace")
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith(b"-") and b"=" not in w]
        prog = os.path.basename(rest[0]).decode("utf-8", "replace") if rest else ""
    return prog


def classify(relpath: str, head: bytes) -> FileKind:
    name = os.path.basename(relpath)
    if name == ".gitattributes":
        return FileKind.GITATTRIBUTES
    lower = name.lower()
    if lower.endswith(SHELL_SUFFIXES):
        return FileKind.SHELL
    if lower.endswith((".py", ".pyi")):
        return FileKind.PYTHON
    if lower.endswith((".md", ".markdown")):
        return FileKind.MARKDOWN
    if lower.endswith((".bat", ".cmd", ".ps1")):
        return FileKind.OTHER
    prog = interpreter_of(head.split(b"\n", 1)[0].rstrip(b"\r"))
    if prog:
        base = prog.rstrip("0123456789.")
        if base in SHELL_INTERPRETERS:
            return FileKind.SHELL
        if base in ("python", "pypy"):
            return FileKind.PYTHON
    return FileKind.OTHER


if TYPE_CHECKING:
    from functools import cached_property as _once  # what _once does, to a type checker
else:

    class _once:  # noqa: N801 - used as a decorator, like functools.cached_property
        """functools.cached_property without its per-instance lock (Python < 3.12 takes an
        RLock on every first access, a measurable cost when every file asks ``is_binary``)."""

        def __init__(self, compute):
            self.compute = compute
            self.name = compute.__name__
            self.__doc__ = compute.__doc__

        def __get__(self, instance, owner):
            if instance is None:
                return self
            value = self.compute(instance)
            instance.__dict__[self.name] = value  # later reads find it first: no call at all
            return value


def _read_regular(abspath: str, limit: int) -> tuple[bytes, os.stat_result]:
    """Up to ``limit`` bytes of a regular file, with its stat. Plain ``os`` calls: this runs
    once per checked file and the buffered file object costs more than the read itself.
    O_NONBLOCK keeps a FIFO put in place of a file from hanging the run."""
    fd = os.open(abspath, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(abspath)
        # Ask only for what the file holds (a read allocates its size up front); a file that
        # grows meanwhile is read on until the limit or end of file.
        want = min(st.st_size + 1, limit)
        chunks = [os.read(fd, want)]
        size = len(chunks[0])
        if size < want:  # a short read of a regular file is its end: no second call needed
            return chunks[0], st
        while chunks[-1] and size < limit:
            chunks.append(os.read(fd, min(limit - size, 1 << 16)))
            size += len(chunks[-1])
        return b"".join(chunks), st  # rare: the file grew, or reached the limit
    finally:
        os.close(fd)


@record(frozen=False)
class SourceFile:
    """One file to check. ``mode`` is what will matter on the box: the git index mode when the
    repository ignores the filesystem's exec bit (``core.fileMode=false``), else ``st_mode``."""

    path: str
    abspath: str
    data: bytes
    mode: int
    kind: FileKind
    truncated: bool = False
    # Parses and other derived data shared by the rules of one run (never persisted).
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def read(cls, path: str, abspath: str, index_mode: int | None = None) -> SourceFile:
        data, st = _read_regular(abspath, MAX_TEXT_BYTES + 1)
        truncated = len(data) > MAX_TEXT_BYTES
        mode = index_mode if index_mode is not None else st.st_mode
        return cls(path, abspath, data, mode, classify(path, data[:256]), truncated)

    def __reduce__(self) -> tuple[type[SourceFile], tuple[str, str, bytes, int, FileKind, bool]]:
        # What a worker process sends back: the fields, not the decoded text or the memo
        # (pickling the text doubled what crossed the pipe).
        fields = (self.path, self.abspath, self.data, self.mode, self.kind, self.truncated)
        return (type(self), fields)

    @_once
    def is_binary(self) -> bool:
        return b"\0" in self.data[:_BINARY_SNIFF]

    @property
    def is_executable(self) -> bool:
        return bool(self.mode & 0o111)

    @property
    def first_line(self) -> bytes:
        return self.data.split(b"\n", 1)[0].rstrip(b"\r")

    @property
    def has_shebang(self) -> bool:
        return self.data.startswith(b"#!")

    @_once
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def line_of_offset(self, offset: int) -> int:
        """1-based line number of a byte offset."""
        return self.data.count(b"\n", 0, offset) + 1

"""Python fed to an interpreter as a heredoc in a shell script (``python - <<'EOF'``,
``python3 <<EOF``): checked as the Python file it is, with line numbers mapped back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding
from rentcheck.record import replace

__all__ = ["heredoc_findings"]

_MEMO_KEY = "python-heredocs"


def _reads_program_on_stdin(argv: list[str]) -> bool:
    """``python``, ``python -``, ``python -u -``: no script file and no ``-c``/``-m``."""
    options = [a for a in argv if a.startswith("-") and a != "-"]
    rest = [a for a in argv if not (a.startswith("-") and a != "-")]
    if any(o in ("-c", "-m") for o in options):
        return False
    return not rest or rest[0] == "-"


def _bodies(source: SourceFile) -> list[tuple[int, SourceFile]]:
    """(lines before the body, the body as a Python source) for each Python heredoc."""
    from rentcheck.lint.shell.common import parsed_script
    from rentcheck.lint.shell.detach import is_python

    found: list[tuple[int, SourceFile]] = []
    for script in parsed_script(source).all_scripts():
        whole = source.data if script.data is None else script.data
        for command in script.commands_where(is_python):
            body = command.heredoc_body()
            if body is None or not _reads_program_on_stdin(command.argv):
                continue
            start = whole.rfind(b"\n", 0, body.start_byte) + 1
            data = whole[start : body.end_byte]
            program = SourceFile(source.path, source.abspath, data, source.mode, FileKind.PYTHON)
            found.append((int(body.start_point[0]) + script.line_offset, program))
    return found


def heredoc_findings(
    source: SourceFile, check: Callable[[SourceFile], Iterable[Finding]]
) -> Iterator[Finding]:
    bodies: list[tuple[int, SourceFile]] | None = source.memo.get(_MEMO_KEY)
    if bodies is None:
        bodies = source.memo[_MEMO_KEY] = _bodies(source)
    for offset, program in bodies:
        for finding in check(program):
            yield replace(
                finding,
                line=None if finding.line is None else finding.line + offset,
                end_line=None if finding.end_line is None else finding.end_line + offset,
            )

"""Python fed to an interpreter as a heredoc in a shell script (``python - <<'EOF'``,
``python3 <<EOF``): checked as the Python file it is, with line numbers mapped back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Finding
from rentcheck.record import record, replace

__all__ = ["HeredocProgram", "heredoc_findings", "python_heredocs"]

_MEMO_KEY = "python-heredocs"
# What bash replaces in an unquoted heredoc (`<<EOF`) before Python reads a byte of it.
_EXPANSIONS = frozenset(
    {"expansion", "simple_expansion", "command_substitution", "arithmetic_expansion"}
)


@record
class HeredocProgram:
    """One Python heredoc: its first line's offset in the file, the body as written, and the
    byte ranges (in ``program.data``) that bash expands before Python sees them."""

    offset: int
    program: SourceFile
    expansions: tuple[tuple[int, int], ...] = ()


def _reads_program_on_stdin(argv: list[str]) -> bool:
    """``python``, ``python -``, ``python -u -``: no script file and no ``-c``/``-m``."""
    options = [a for a in argv if a.startswith("-") and a != "-"]
    rest = [a for a in argv if not (a.startswith("-") and a != "-")]
    if any(o in ("-c", "-m") for o in options):
        return False
    return not rest or rest[0] == "-"


def _bodies(source: SourceFile) -> list[HeredocProgram]:
    from rentcheck.lint.shell.common import parsed_script
    from rentcheck.lint.shell.detach import is_python

    found: list[HeredocProgram] = []
    for script in parsed_script(source).all_scripts():
        whole = source.data if script.data is None else script.data
        for command in script.commands_where(is_python):
            body = command.heredoc_body()
            if body is None or not _reads_program_on_stdin(command.argv):
                continue
            start = whole.rfind(b"\n", 0, body.start_byte) + 1
            data = whole[start : body.end_byte]
            program = SourceFile(source.path, source.abspath, data, source.mode, FileKind.PYTHON)
            expansions = tuple(
                (int(c.start_byte) - start, int(c.end_byte) - start)
                for c in body.children
                if c.type in _EXPANSIONS
            )
            offset = int(body.start_point[0]) + script.line_offset
            found.append(HeredocProgram(offset, program, expansions))
    return found


def python_heredocs(source: SourceFile) -> list[HeredocProgram]:
    """The Python heredocs of a shell script (parsed once per run)."""
    bodies: list[HeredocProgram] | None = source.memo.get(_MEMO_KEY)
    if bodies is None:
        bodies = source.memo[_MEMO_KEY] = _bodies(source)
    return bodies


def mapped_back(finding: Finding, offset: int, path: str | None = None) -> Finding:
    """A finding on a heredoc body, moved to the body's lines in the file."""
    return replace(
        finding,
        path=finding.path if path is None else path,
        line=None if finding.line is None else finding.line + offset,
        end_line=None if finding.end_line is None else finding.end_line + offset,
    )


def heredoc_findings(
    source: SourceFile, check: Callable[[SourceFile], Iterable[Finding]]
) -> Iterator[Finding]:
    for heredoc in python_heredocs(source):
        for finding in check(heredoc.program):
            yield mapped_back(finding, heredoc.offset)

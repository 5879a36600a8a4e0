"""RC209/RC210: pyflakes-class errors (undefined names, bad imports, syntax errors) from the
ruff binary, run once per repository over the training code and read as JSON."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator

from rentcheck.lint.check import Project, ProjectCheck
from rentcheck.lint.python.common import feeds_python_heredoc, python_applies
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Applicability, Finding, Rule, Severity

RUFF_RULE = Rule(
    code="RC210",
    name="python-error-via-ruff",
    family="python",
    summary="Undefined name, broken import or syntax error in training code (found by ruff)",
    why=(
        "A typo in a name used only at the end of an epoch, in the eval branch or in the "
        "checkpoint code is a NameError hours into a paid run, after the GPU time is spent. "
        "These are found statically in milliseconds; rentcheck runs ruff's pyflakes rules "
        "(undefined names, unused or redefined imports, syntax errors) so they never reach "
        "the box, also over the Python a shell script feeds `python -` as a heredoc."
    ),
    example_bad="def save(step):\n    torch.save(state, f'ckpt-{stpe}.pt')  # F821 undefined name",
    example_good="def save(step):\n    torch.save(state, f'ckpt-{step}.pt')",
    fix="Fix the name or import ruff points at (`ruff check --select F FILE` shows the context).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

RUFF_MISSING_RULE = Rule(
    code="RC209",
    name="ruff-unavailable",
    family="python",
    summary="ruff is not installed, so pyflakes-class checks of Python code were skipped",
    why=(
        "The undefined-name and import checks (RC210) come from the ruff binary. Without it "
        "they silently would not run and a clean result would claim more than was checked; "
        "this note says so instead, once per run."
    ),
    example_bad="pip install rentcheck            # no ruff: RC210 skipped",
    example_good="pip install 'rentcheck[lint-python]'",
    fix="Install the extra: `pip install 'rentcheck[lint-python]'` (or put `ruff` on PATH).",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.NOTE,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.python.heredoc import HeredocProgram

# Undefined names and syntax errors fail at run time; unused or shadowed imports are smells.
ERROR_CODES = ("F821", "F822", "F823", "F63", "F7", "E9")
SELECT = "F401,F811,F821,F822,F823,F63,F7,E9"


def _ruff() -> str | None:
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "ruff")
    return beside if os.path.exists(beside) else shutil.which("ruff")


def _identity(ruff: str) -> str:
    """What ruff's answer for a file depends on besides its bytes: which binary, which rules."""
    st = os.stat(ruff)
    return f"ruff|{os.path.realpath(ruff)}|{st.st_size}|{st.st_mtime_ns}|{SELECT}"


def _name_kind(path: str) -> str:
    """What of a file's name ruff's answer depends on: stubs (.pyi) and package __init__
    files are judged differently from the same bytes in an ordinary module."""
    name = os.path.basename(path)
    return f"{os.path.splitext(name)[1]}|{name == '__init__.py'}"


def _applies(source: SourceFile) -> bool:
    return python_applies(source) or feeds_python_heredoc(source)


def _run(project: Project) -> Iterator[Finding]:
    files = [f for f in project.files if python_applies(f)]
    scripts = [f for f in project.files if feeds_python_heredoc(f)]
    if not files and not scripts:
        return
    ruff = _ruff()
    if ruff is None:
        yield RUFF_MISSING_RULE.finding(
            "ruff is not installed: undefined-name and import checks (RC210) were skipped; "
            "pip install 'rentcheck[lint-python]'",
            path=(files or scripts)[0].path,
        )
        return
    yield from _cached(project, ruff, files, _ruff_findings)
    yield from _cached(project, ruff, scripts, _heredoc_findings)


def _cached(
    project: Project,
    ruff: str,
    files: list[SourceFile],
    judge: Callable[[str, list[SourceFile]], dict[str, list[Finding]] | str],
) -> Iterator[Finding]:
    """ruff's answers for ``files``: pyflakes rules judge one file at a time, so answers are
    cached by content, and only the files the cache has not seen are handed to ``judge``
    (a warm run starts no process)."""
    cache, identity = project.cache, f"{_identity(ruff)}|{judge.__name__}"
    keys: dict[str, str] = {}
    misses: list[SourceFile] = []
    for source in files:
        if cache is None:
            misses.append(source)
            continue
        key = keys[source.path] = cache.key(source.data, f"{identity}|{_name_kind(source.path)}")
        cached = cache.get(key, source.path)
        if cached is None:
            misses.append(source)
        else:
            yield from cached
    if not misses:
        return
    found = judge(ruff, misses)
    if isinstance(found, str):
        yield RUFF_MISSING_RULE.finding(found, path=misses[0].path)
        return
    for source in misses:
        if cache is not None:
            cache.put(keys[source.path], found.get(source.path, []))
        yield from found.get(source.path, [])


def _heredoc_findings(ruff: str, scripts: list[SourceFile]) -> dict[str, list[Finding]] | str:
    """RC210 findings per shell script for the Python it feeds an interpreter as heredocs:
    each body goes to ruff as a file of its own, the findings come back on the script's lines."""
    import tempfile

    from rentcheck.lint.python.heredoc import mapped_back, python_heredocs

    programs: dict[str, tuple[SourceFile, HeredocProgram]] = {}
    with tempfile.TemporaryDirectory(prefix="rentcheck-heredoc-") as folder:
        bodies: list[SourceFile] = []
        for script in scripts:
            for heredoc in python_heredocs(script):
                name = f"heredoc{len(bodies)}.py"
                abspath = os.path.join(folder, name)
                data = _as_python_reads_it(heredoc)
                with open(abspath, "wb") as handle:
                    handle.write(data)
                body = SourceFile(name, abspath, data, heredoc.program.mode, FileKind.PYTHON)
                bodies.append(body)
                programs[name] = (script, heredoc)
        if not bodies:
            return {}
        found = _ruff_findings(ruff, bodies)
    if isinstance(found, str):
        return found
    by_script: dict[str, list[Finding]] = {}
    for name, findings in found.items():
        script, heredoc = programs[name]
        by_script.setdefault(script.path, []).extend(
            mapped_back(f, heredoc.offset, script.path)
            for f in findings
            if not _about_shell_text(f, heredoc)
        )
    return by_script


def _as_python_reads_it(heredoc: HeredocProgram) -> bytes:
    """The body with each shell expansion (`$X`, `${X}`, `$(cmd)`) replaced by as many `0`s:
    a number where bash puts its text, on the same lines and columns."""
    data = bytearray(heredoc.program.data)
    for start, end in heredoc.expansions:
        data[start:end] = bytes(b if b == 0x0A else 0x30 for b in data[start:end])
    return bytes(data)


def _about_shell_text(finding: Finding, heredoc: HeredocProgram) -> bool:
    """Whether a finding may be about what bash puts in the body rather than the Python
    written there: a syntax error in a body with expansions (`import $MODULE`), or any
    finding that touches an expanded span (`print(model_$N)`)."""
    if not heredoc.expansions:
        return False
    if _is_syntax_error(str(finding.details.get("ruff_code", ""))):
        return True
    data = heredoc.program.data
    line_starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    if finding.line is None or finding.line > len(line_starts):
        return True
    first = line_starts[finding.line - 1] + (finding.col or 1) - 1
    end_line = finding.end_line or finding.line
    last = (
        line_starts[min(end_line, len(line_starts)) - 1] + (finding.end_col or finding.col or 1) - 1
    )
    return any(start <= last and first <= end for start, end in heredoc.expansions)


def _is_syntax_error(code: str) -> bool:
    """ruff reports a syntax error as `invalid-syntax` (older releases: `E999`, or no code)."""
    return code in ("syntax-error", "invalid-syntax") or code.startswith("E9")


def _ruff_findings(ruff: str, files: list[SourceFile]) -> dict[str, list[Finding]] | str:
    """RC210 findings per file path from one ruff run, or why there are none."""
    import json
    import subprocess

    by_abspath = {os.path.realpath(f.abspath): f for f in files}
    proc = subprocess.run(
        [
            ruff,
            "check",
            "--isolated",
            "--no-cache",
            "--output-format",
            "json",
            "--exit-zero",
            "--select",
            SELECT,
            *sorted(by_abspath),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if proc.returncode != 0:  # with --exit-zero, any other status means ruff itself failed
        return f"ruff failed (exit {proc.returncode}): {proc.stderr.strip()[:200]}"
    try:
        diagnostics = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        return f"ruff did not return JSON (exit {proc.returncode}): {proc.stderr.strip()[:200]}"
    found: dict[str, list[Finding]] = {}
    for item in diagnostics:
        source = by_abspath.get(os.path.realpath(item.get("filename", "")))
        if source is None:
            continue
        code = item.get("code") or "syntax-error"
        location = item.get("location") or {}
        end = item.get("end_location") or {}
        severe = _is_syntax_error(code) or code.startswith(ERROR_CODES)
        found.setdefault(source.path, []).append(
            RUFF_RULE.finding(
                f"{code} {item.get('message', '')}",
                severity=Severity.ERROR if severe else Severity.WARNING,
                path=source.path,
                line=location.get("row"),
                col=location.get("column"),
                end_line=end.get("row"),
                end_col=end.get("column"),
                details={"ruff_code": code, "ruff_url": item.get("url")},
            )
        )
    if any(f.details.get("ruff_code") == "F821" for fs in found.values() for f in fs):
        from rentcheck.lint.python.ruff_filter import drop_unreachable_undefined

        sources = {f.path: f for f in files}
        found = {path: drop_unreachable_undefined(sources[path], fs) for path, fs in found.items()}
    return found


RUFF = ProjectCheck(RUFF_RULE, _applies, _run)

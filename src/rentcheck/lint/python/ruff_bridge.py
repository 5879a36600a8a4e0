"""RC209/RC210: pyflakes-class errors (undefined names, bad imports, syntax errors) from the
ruff binary, run once per repository over the training code and read as JSON."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

from rentcheck.lint.check import Project, ProjectCheck
from rentcheck.lint.python.common import python_applies
from rentcheck.lint.source import SourceFile
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
        "the box."
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


def _run(project: Project) -> Iterator[Finding]:
    files = [f for f in project.files if python_applies(f)]
    if not files:
        return
    ruff = _ruff()
    if ruff is None:
        yield RUFF_MISSING_RULE.finding(
            "ruff is not installed: undefined-name and import checks (RC210) were skipped; "
            "pip install 'rentcheck[lint-python]'",
            path=files[0].path,
        )
        return
    # ruff's pyflakes rules judge one file at a time: answers are cached by content, and only
    # the files the cache has not seen are handed to ruff (a warm run starts no process).
    cache, identity = project.cache, _identity(ruff)
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
    found = _ruff_findings(ruff, misses)
    if isinstance(found, str):
        yield RUFF_MISSING_RULE.finding(found, path=misses[0].path)
        return
    for source in misses:
        if cache is not None:
            cache.put(keys[source.path], found.get(source.path, []))
        yield from found.get(source.path, [])


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
        severe = code == "syntax-error" or code.startswith(ERROR_CODES)
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


RUFF = ProjectCheck(RUFF_RULE, python_applies, _run)

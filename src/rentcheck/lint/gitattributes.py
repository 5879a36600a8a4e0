"""RC102: ``.gitattributes`` does not pin LF endings for the shell scripts in the repository."""

from __future__ import annotations

import os

from rentcheck.lint.check import Project, ProjectCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Applicability, Edit, Finding, Fix, Rule, Severity

RULE = Rule(
    code="RC102",
    name="gitattributes-missing-eol-lf",
    family="shell",
    summary="Shell scripts are not covered by an `eol=lf` rule in .gitattributes",
    why=(
        "Fixing CRLF once does not keep it fixed: a collaborator on Windows with "
        "core.autocrlf=true checks the script out with CRLF endings again and uploads it to the "
        "box, where it breaks at run time. An `eol=lf` attribute makes git write LF on every "
        "checkout, whatever the client's settings."
    ),
    example_bad="# .gitattributes\n*.py text\n",
    example_good="# .gitattributes\n*.sh text eol=lf\n*.bash text eol=lf\n",
    fix=(
        "Add `*.sh text eol=lf` (and a line for each other script pattern) to .gitattributes; "
        "`rentcheck check --fix` appends the lines it lists."
    ),
    fix_applicability=Applicability.SAFE,
    default_severity=Severity.WARNING,
)


def _uncovered(git_root: str, relpaths: list[str]) -> list[str]:
    """Paths whose effective attributes (as git itself computes them) do not force LF."""
    import subprocess

    proc = subprocess.run(
        ["git", "-C", git_root, "check-attr", "-z", "--stdin", "eol", "text"],
        input=b"\0".join(p.encode() for p in relpaths) + b"\0",
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        return []
    fields = proc.stdout.split(b"\0")
    attrs: dict[str, dict[str, str]] = {}
    for i in range(0, len(fields) - 2, 3):
        path, attr, value = (f.decode("utf-8", "surrogateescape") for f in fields[i : i + 3])
        attrs.setdefault(path, {})[attr] = value
    return [p for p in relpaths if not _forces_lf(attrs.get(p, {}))]


def _forces_lf(attrs: dict[str, str]) -> bool:
    return attrs.get("eol") == "lf" and attrs.get("text") != "unset"


def _pattern_for(relpath: str) -> str:
    _, ext = os.path.splitext(relpath)
    return f"*{ext}" if ext else "/" + relpath


def _run(project: Project) -> list[Finding]:
    if project.git_root is None:
        return []
    scripts = [f for f in project.files if _applies(f)]
    if not scripts:
        return []
    git_rel = {os.path.relpath(f.abspath, project.git_root): f for f in scripts}
    missing = _uncovered(project.git_root, sorted(git_rel))
    if not missing:
        return []
    patterns = sorted({_pattern_for(p) for p in missing})
    lines = [f"{pattern} text eol=lf" for pattern in patterns]
    attr_path = os.path.join(project.git_root, ".gitattributes")
    try:
        with open(attr_path, "rb") as handle:
            current = handle.read()
    except FileNotFoundError:
        current = b""
    if current and not current.endswith(b"\n"):
        current += b"\n"
    new = current + "".join(line + "\n" for line in lines).encode()
    shown = ", ".join(git_rel[p].path for p in missing[:3]) + (
        f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    )
    return [
        RULE.finding(
            (
                f"{len(missing)} shell script(s) not pinned to LF ({shown}); add to "
                f".gitattributes: {'; '.join(lines)}"
            ),
            path=os.path.relpath(attr_path, project.root),
            line=None,
            details={"uncovered": [git_rel[p].path for p in missing], "add_lines": lines},
            fix=Fix(
                "append eol=lf rules to .gitattributes", Applicability.SAFE, (Edit(attr_path, new),)
            ),
        )
    ]


def _applies(source: SourceFile) -> bool:
    return source.kind is FileKind.SHELL


CHECK = ProjectCheck(RULE, _applies, _run, needs_git=True)

"""RC101: CRLF line endings in a script that a Linux box will execute."""

from __future__ import annotations

from rentcheck.lint.check import FileCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.model import Applicability, Edit, Finding, Fix, Rule, Severity

RULE = Rule(
    code="RC101",
    name="crlf-line-endings",
    family="shell",
    summary="Shell script has CRLF (Windows) line endings",
    why=(
        "bash reads the carriage return as part of each word, so a script saved on Windows or "
        "checked out with core.autocrlf=true fails only once it runs on the rented box: "
        "`/usr/bin/env: 'bash\\r': No such file or directory`, `$'\\r': command not found`, or "
        "worse, paths and flags that silently gain a trailing \\r (`cd /data\\r` fails, "
        "`--epochs 10\\r` is rejected). The meter is already running when you find out."
    ),
    example_bad="#!/usr/bin/env bash\\r\\npython train.py --steps 100\\r\\n",
    example_good="#!/usr/bin/env bash\\npython train.py --steps 100\\n",
    fix=(
        "Run `rentcheck check --fix` (rewrites CRLF to LF atomically, keeping the file mode), "
        "then add `*.sh text eol=lf` to .gitattributes so git never converts it back."
    ),
    fix_applicability=Applicability.SAFE,
    default_severity=Severity.ERROR,
)


def _applies(source: SourceFile) -> bool:
    return source.kind is FileKind.SHELL and not source.is_binary and not source.truncated


def _run(source: SourceFile) -> list[Finding]:
    data = source.data
    first = data.find(b"\r\n")
    if first < 0:
        return []
    crlf = data.count(b"\r\n")
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    line = source.line_of_offset(first)
    mixed = crlf < data.count(b"\n")
    message = (
        f"CRLF line endings ({crlf} of {lines} lines"
        + (", mixed with LF" if mixed else "")
        + "); bash on the box will read '\\r' as part of commands"
    )
    fixed = data.replace(b"\r\n", b"\n")
    return [
        RULE.finding(
            message,
            path=source.path,
            line=line,
            col=first - (data.rfind(b"\n", 0, first) + 1) + 1,
            details={"crlf_lines": crlf, "lines": lines, "mixed": mixed},
            fix=Fix(
                "convert CRLF to LF",
                Applicability.SAFE,
                (Edit(source.abspath, fixed),),
            ),
        )
    ]


CHECK = FileCheck(RULE, _applies, _run, kinds=frozenset({FileKind.SHELL}))

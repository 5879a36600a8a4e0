"""Inline suppressions, written in each file's own comment syntax.

    cmd  # rentcheck: ignore[RC101]          this line
    # rentcheck: ignore[RC101,RC103]          the next line that is not a comment
    # rentcheck: ignore-file[RC1]            the whole file (only before the first command)
    <!-- rentcheck: ignore[RC701] -->         markdown: the same forms in an HTML comment

Codes may be exact (``RC101``) or a family prefix (``RC1``, ``RC1xx``); ``ignore`` without a
list suppresses every code. A directive that suppresses nothing is reported as RC900.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rentcheck.config import code_matches
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.meta_rules import UNKNOWN_CODE_RULE, UNUSED_SUPPRESSION_RULE
from rentcheck.model import Finding, Rule
from rentcheck.record import record

__all__ = ["Directive", "apply_suppressions", "parse_directives"]

_HASH = re.compile(rb"#\s*rentcheck:\s*(ignore-file|ignore)\b(?:\[([^\]]*)\])?")
_HTML = re.compile(rb"<!--\s*rentcheck:\s*(ignore-file|ignore)\b(?:\[([^\]]*)\])?\s*-->")


@record
class Directive:
    line: int  # where the directive is written
    targets: tuple[int, ...]  # lines it covers; empty for file-level
    file_level: bool
    codes: tuple[str, ...]  # empty = every code
    used: set[str]  # the codes it suppressed, filled in as findings are matched
    misplaced: bool = False  # ignore-file written after the first command: covers nothing


def _is_comment_or_blank(line: bytes, kind: FileKind) -> bool:
    stripped = line.strip()
    if kind is FileKind.MARKDOWN:
        return not stripped or (stripped.startswith(b"<!--") and stripped.endswith(b"-->"))
    return not stripped or stripped.startswith(b"#")


def _python_comment_lines(source: SourceFile) -> set[int] | None:
    """Lines holding a real ``#`` comment, so a directive quoted in a string is not one."""
    import io
    import tokenize

    try:
        tokens = tokenize.tokenize(io.BytesIO(source.data).readline)
        return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError):
        return None  # unparsable Python: fall back to the textual form


def parse_directives(source: SourceFile) -> list[Directive]:
    if b"rentcheck:" not in source.data or source.is_binary:
        return []
    pattern = _HTML if source.kind is FileKind.MARKDOWN else _HASH
    comments = _python_comment_lines(source) if source.kind is FileKind.PYTHON else None
    lines = source.data.split(b"\n")
    directives: list[Directive] = []
    seen_command = False
    for index, raw in enumerate(lines):
        number = index + 1
        match = pattern.search(raw)
        if match is not None and comments is not None and number not in comments:
            match = None
        if match is None:
            seen_command = seen_command or not _is_comment_or_blank(raw, source.kind)
            continue
        codes = tuple(
            c.strip().decode("ascii", "replace")
            for c in (match.group(2) or b"").split(b",")
            if c.strip()
        )
        own_line = not raw[: match.start()].strip()
        if match.group(1) == b"ignore-file":
            # A file-level directive after the first command is ambiguous: treat it as
            # covering nothing so RC900 points at it.
            directives.append(Directive(number, (), True, codes, set(), misplaced=seen_command))
            if not own_line:
                seen_command = True
            continue
        targets = [number]
        if own_line:
            following = next(
                (
                    j + 1
                    for j in range(index + 1, len(lines))
                    if not _is_comment_or_blank(lines[j], source.kind)
                ),
                None,
            )
            if following is not None:
                targets.append(following)
        else:
            seen_command = True
        directives.append(Directive(number, tuple(targets), False, codes, set()))
    return directives


def _covers(directive: Directive, finding: Finding) -> str | None:
    """The directive code that suppresses ``finding``, or None."""
    if directive.misplaced:
        return None
    if not directive.file_level and (finding.line is None or finding.line not in directive.targets):
        return None
    if not directive.codes:
        return "*"
    return next((c for c in directive.codes if code_matches(finding.code, c)), None)


def apply_suppressions(
    source: SourceFile,
    findings: Iterable[Finding],
    enabled: Mapping[str, Rule],
    known: Mapping[str, Rule],
) -> tuple[list[Finding], int]:
    """Drop suppressed findings; add RC900/RC901 for directives that are unused or unknown.

    Returns the kept findings and how many were suppressed.
    """
    directives = parse_directives(source)
    if not directives:
        return list(findings), 0
    kept: list[Finding] = []
    suppressed = 0
    for finding in findings:
        hit = None
        for directive in directives:
            hit = _covers(directive, finding)
            if hit is not None:
                directive.used.add(hit)
                break
        if hit is None:
            kept.append(finding)
        else:
            suppressed += 1
    kept.extend(_meta_findings(source, directives, enabled, known))
    return kept, suppressed


def _meta_findings(
    source: SourceFile,
    directives: list[Directive],
    enabled: Mapping[str, Rule],
    known: Mapping[str, Rule],
) -> Iterable[Finding]:
    report_unused = UNUSED_SUPPRESSION_RULE.code in enabled
    for directive in directives:
        if directive.misplaced:
            if report_unused:
                yield _finding(
                    UNUSED_SUPPRESSION_RULE,
                    "file-level suppression after the first command has no effect; "
                    "move it above the first command",
                    source.path,
                    directive.line,
                )
            continue
        if not directive.codes:
            if not directive.used and report_unused:
                yield _finding(
                    UNUSED_SUPPRESSION_RULE,
                    "blanket suppression matches no finding",
                    source.path,
                    directive.line,
                )
            continue
        for code in directive.codes:
            if not any(code_matches(k, code) for k in known):
                if UNKNOWN_CODE_RULE.code in enabled:
                    yield _finding(
                        UNKNOWN_CODE_RULE,
                        f"unknown rule code {code!r} in directive",
                        source.path,
                        directive.line,
                    )
            # Only a code whose rule ran this time can be known to be unused.
            elif (
                code not in directive.used
                and report_unused
                and any(code_matches(k, code) for k in enabled if k != UNUSED_SUPPRESSION_RULE.code)
            ):
                scope = "file-level" if directive.file_level else "line"
                yield _finding(
                    UNUSED_SUPPRESSION_RULE,
                    f"unused {scope} suppression of {code}",
                    source.path,
                    directive.line,
                )


def _finding(rule: Rule, message: str, path: str, line: int) -> Finding:
    return rule.finding(message, path=path, line=line, col=1)

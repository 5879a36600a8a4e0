"""``rentcheck profiles check``: one profile file in, findings (and the Profile) out.

Only format is judged here (frontmatter, sections, stamps present and well-formed), never
the calendar: the result of a check does not change from one month to the next, which is
what a pre-commit hook needs. Ages are ``rentcheck stale``'s business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rentcheck.model import Finding, Severity
from rentcheck.profiles import rules
from rentcheck.profiles.document import Block, MarkdownDoc, read_markdown
from rentcheck.profiles.load import profile_from_doc
from rentcheck.profiles.model import Profile
from rentcheck.profiles.stamps import Stamp, StampKind, find_stamps

__all__ = ["SECTIONS", "ProfileResult", "check_profile_file", "normalise_section", "source_matches"]

SECTIONS = (
    "LAUNCH",
    "STORAGE",
    "NETWORK",
    "INTERRUPTION + RESUME",
    "TEARDOWN + BILLING",
    "DETACH",
    "GOTCHAS",
    "OVERRIDES",
)
# Words that make a statement about money or about data surviving: such a statement needs a
# stamp. Data words are the stating forms ("is deleted", "wipes"), not the imperative ("then
# delete the volume"), which is advice; "cost" and "lost" are too common to mean anything.
_MONEY_OR_DATA = re.compile(
    r"(?<![\w-])(?:bill(?:s|ed|ing)?|charg(?:e|es|ed|ing)|refund(?:s|ed|able)?|invoice[sd]?|"
    r"fees?|price[sd]?|pricing|arrears|prepaid|per[ -](?:gb|second|minute|hour|gpu-hour)|"
    r"deleted|deletes|wiped|wipes|destroyed|destroys|erased|erases|purged|purges|"
    r"disappears?|(?:is|are|gets?|get) (?:released|removed|cleared|lost)|survives?|outlives?)"
    r"(?![\w-])|[$¥€]\s?\d|\d\s?(?:元|USD|CNY)",
    re.IGNORECASE,
)
# A statement that says a fact is unknown claims nothing that could be verified.
_SAYS_UNKNOWN = re.compile(
    r"\b(?:unknown|undocumented|not (?:documented|recorded|known|described|covered|stated)|"
    r"no [\w-]+ (?:is|are) known)\b",
    re.IGNORECASE,
)
# DETACH is about processes surviving a hang-up or reboot (Linux behaviour, not a platform's
# billing or storage rules); OVERRIDES is about editing the file.
_UNSTAMPED_SECTIONS = ("DETACH", "OVERRIDES")


@dataclass
class ProfileResult:
    path: str  # as shown in reports
    doc: MarkdownDoc
    profile: Profile | None = None
    findings: list[Finding] = field(default_factory=list)
    stamps: list[Stamp] = field(default_factory=list)


def _finding(rule_code: str, severity: Severity, message: str, path: str, line: int) -> Finding:
    return rules.RULES_BY_CODE[rule_code].finding(
        message, path=path, line=line, col=1, severity=severity
    )


def check_profile_file(
    abspath: str, display: str | None = None, *, shipped: bool = False
) -> ProfileResult:
    """Read and judge one profile; ``profile`` is set when the frontmatter is valid."""
    display = display or abspath
    doc = read_markdown(abspath, display)
    result = ProfileResult(display, doc)
    profile, problems = profile_from_doc(doc, abspath, shipped=shipped)
    result.profile = profile
    result.findings.extend(problems)
    result.findings.extend(_section_findings(doc))
    result.stamps = find_stamps(doc)
    result.findings.extend(_stamp_findings(doc, result.stamps, profile))
    return result


def normalise_section(title: str) -> str:
    title = re.sub(r"\s*\([^()]*\)\s*$", "", title)  # a section-level stamp
    title = re.sub(r"^\d+[.)]\s*", "", title)
    return " ".join(title.replace("*", "").split()).upper()


def _section_findings(doc: MarkdownDoc) -> list[Finding]:
    code, severity = rules.SECTIONS_OUT_OF_ORDER.code, rules.SECTIONS_OUT_OF_ORDER.default_severity
    findings = []
    seen: dict[str, int] = {}
    last_index = -1
    h2 = [h for h in doc.headings if h.level == 2]
    for number, heading in enumerate(h2):
        name = normalise_section(heading.title)
        if name not in SECTIONS:
            message = f"unexpected section {heading.title!r}; a profile has exactly these: " + (
                ", ".join(SECTIONS)
            )
            findings.append(_finding(code, severity, message, doc.path, heading.line))
            continue
        if name in seen:
            message = f"section {name} appears twice (first on line {seen[name]})"
            findings.append(_finding(code, severity, message, doc.path, heading.line))
            continue
        seen[name] = heading.line
        index = SECTIONS.index(name)
        if index < last_index:
            message = f"section {name} comes after {SECTIONS[last_index]}; the order is " + (
                " > ".join(SECTIONS)
            )
            findings.append(_finding(code, severity, message, doc.path, heading.line))
        last_index = max(last_index, index)
        next_start = h2[number + 1].start if number + 1 < len(h2) else len(doc.masked)
        if not doc.masked[heading.end : next_start].strip():
            message = f"section {name} is empty; say what is known, or that nothing is"
            findings.append(_finding(code, severity, message, doc.path, heading.line))
    end_line = doc.position(len(doc.text))[0]
    for name in SECTIONS:
        if name not in seen:
            message = f"section {name} is missing (`## {name}`)"
            findings.append(_finding(code, severity, message, doc.path, end_line))
    return findings


def source_matches(name: str, url: str) -> bool:
    """Whether a stamp's short source name points at ``url``: every word of the name occurs
    in the URL (``runpod-network-volumes`` -> ``.../storage/create-network-volumes``)."""
    words = [w for w in re.split(r"[^a-z0-9@]+", name.lower()) if w]
    target = url.lower()
    return bool(words) and all(word in target for word in words)


def _stamp_findings(
    doc: MarkdownDoc, stamps: list[Stamp], profile: Profile | None
) -> list[Finding]:
    findings = []
    body = [s for s in stamps if not s.in_frontmatter]
    for stamp in body:
        if stamp.kind is StampKind.MALFORMED:
            rule = rules.MALFORMED_STAMP
            message = f"malformed stamp {stamp.text!r}: {stamp.problem}"
            findings.append(_stamp_finding(rule.code, rule.default_severity, message, doc, stamp))
        elif stamp.kind is StampKind.VERIFIED and profile is not None:
            rule = rules.UNKNOWN_STAMP_SOURCE
            if stamp.source is None:
                message = f"stamp {stamp.text!r} names no source; write `verified <source> YYYY-MM`"
            elif not any(source_matches(stamp.source, s.url) for s in profile.sources):
                message = (
                    f"stamp source {stamp.source!r} matches none of the frontmatter sources; "
                    "every word of the name must occur in one of their URLs"
                )
            else:
                continue
            findings.append(_stamp_finding(rule.code, rule.default_severity, message, doc, stamp))
    findings.extend(_unstamped_facts(doc, body))
    return findings


def _stamp_finding(
    code: str, severity: Severity, message: str, doc: MarkdownDoc, stamp: Stamp
) -> Finding:
    return rules.RULES_BY_CODE[code].finding(
        message,
        path=doc.path,
        line=stamp.line,
        col=stamp.col,
        end_line=stamp.end_line,
        end_col=stamp.end_col,
        severity=severity,
    )


def _unstamped_facts(doc: MarkdownDoc, stamps: list[Stamp]) -> list[Finding]:
    rule = rules.UNSTAMPED_MONEY_FACT
    # A stamp in a level-2 heading covers its whole section.
    h2_lines = {h.line for h in doc.headings if h.level == 2}
    stamped_sections = {s.section for s in stamps if s.in_heading and s.line in h2_lines}
    starts = sorted(s.start for s in stamps)
    blocks = doc.blocks()
    findings = []
    for index, block in enumerate(blocks):
        section = normalise_section(block.section) if block.section else None
        if section is None or section in _UNSTAMPED_SECTIONS or block.section in stamped_sections:
            continue
        match = _MONEY_OR_DATA.search(doc.masked, block.start, block.end)
        if match is None or _has_stamp(starts, block):
            continue
        if _SAYS_UNKNOWN.search(doc.masked, block.start, block.end):
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if block.kind == "table" and following is not None and _has_stamp(starts, following):
            continue  # a table's stamp may sit in the sentence right under it
        word = match.group().strip()
        message = (
            f"{_describe(block)} mentions {word!r} (money or data) but carries no stamp; add "
            "`(verified <source> YYYY-MM)` or `(unverified)`"
        )
        line, col = doc.position(match.start())
        findings.append(rule.finding(message, path=doc.path, line=line, col=col))
    return findings


def _has_stamp(starts: list[int], block: Block) -> bool:
    import bisect

    index = bisect.bisect_left(starts, block.start)
    return index < len(starts) and starts[index] < block.end


def _describe(block: Block) -> str:
    return {"item": "this list item", "table": "this table", "paragraph": "this paragraph"}[
        block.kind
    ]

"""Finding ``verified <source> YYYY-MM`` stamps in markdown, and everything that looks like one.

The grammar, as a person writes it::

    verified 2026-06                          bare
    (verified runpod-pricing 2026-06)         a source before the date, inside parentheses
    (AD-DANGER, verified 2026-06)             words before the keyword are not part of it
    ## TEARDOWN (verified console 2026-06)    in a heading: it covers the whole section
    verified: "2026-06"                       a ``sources`` entry in YAML frontmatter

Between the keyword and the date there may be up to three source words (up to eight inside
parentheses), separated by any whitespace, line breaks included, but never a blank line. The
first date after the keyword is the stamp's date: other dates on the same line are not stamps.
Text inside code (fenced or inline) and HTML comments is ignored.

Not stamps: ``unverified`` (counted as an explicit "no source" marker), ``verified=true``,
"verified" followed by no date. Distinguished: a negated stamp (``not re-verified since
2026-06``) is unverified, not fresh; a date attempt that is not ``YYYY-MM`` (``verified
2026-13``, ``verified June``) is malformed; a parenthesised citation that ends in a month but
lacks the word (``(filesystems doc 2026-06)``) is a dated citation without "verified".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from rentcheck.profiles.document import MarkdownDoc
from rentcheck.profiles.months import Month

__all__ = ["Stamp", "StampKind", "find_stamps"]

_KEYWORD = re.compile(r"(?<![\w-])(re-?)?verified(?![\w=-])", re.IGNORECASE)
_UNVERIFIED = re.compile(r"(?<![\w-])unverified(?![\w-])", re.IGNORECASE)
_NEGATION = re.compile(r"(?:\bnot|\bnever|\bno\s+longer)\s+(?:yet\s+|been\s+)?$", re.IGNORECASE)
_GAP = re.compile(r"[\s*>]*")
_GAP_IN_PARENS = re.compile(r"[\s*>,]*")
_TOKEN = re.compile(r"[^\s(),;|\[\]*]+")
_CITATION_DATE = re.compile(r"(?<![\w./-])(\d{4}-\d{2})[ \t]{0,3}\)")
_FRONT_KEY = re.compile(r"^([ \t]*)(-[ \t]+)?verified[ \t]*:[ \t]*(.*?)[ \t]*(?:#.*)?$")
_FRONT_URL = re.compile(r"^[ \t]*(?:-[ \t]+)?url[ \t]*:[ \t]*[\"']?([^\"'#\s]+)")

_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")
_DATE_ATTEMPTS = (
    (re.compile(r"^\d{4}-\d$"), "write the month with two digits"),
    (re.compile(r"^\d{4}[/.]\d{1,2}$"), "use a dash: YYYY-MM"),
    (re.compile(r"^\d{1,2}[/.-]\d{4}$"), "put the year first: YYYY-MM"),
    (re.compile(r"^(19|20|21)\d\d$"), "a year without a month"),
)
_MONTH_NAMES = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_LINKING_WORDS = frozenset({"since", "on", "in", "at", "by", "from", "against"})
_MAX_SOURCE_WORDS = 3
_MAX_SOURCE_WORDS_IN_PARENS = 8
_WINDOW = 400  # characters after the keyword in which its date must appear


class StampKind(enum.Enum):
    VERIFIED = "verified"
    NOT_REVERIFIED = "not-re-verified"
    MALFORMED = "malformed"
    DATED_CITATION = "dated-citation"  # a month in a citation, without the word "verified"
    UNVERIFIED = "unverified"  # an explicit "(unverified)" marker


@dataclass(frozen=True)
class Stamp:
    kind: StampKind
    start: int
    end: int
    line: int
    col: int
    end_line: int
    end_col: int
    text: str  # the stamp as written, whitespace collapsed
    month: Month | None = None
    source: str | None = None
    problem: str | None = None  # why a malformed stamp is malformed
    section: str | None = None  # the level-2 heading it sits under
    in_heading: bool = False  # a section-level stamp
    in_frontmatter: bool = False

    @property
    def counts_as_verified(self) -> bool:
        return self.kind is StampKind.VERIFIED


def find_stamps(doc: MarkdownDoc) -> list[Stamp]:
    """Every stamp-like thing in ``doc``, in file order."""
    found: list[Stamp] = []
    masked = doc.masked
    for match in _KEYWORD.finditer(masked, doc.body_start):
        stamp = _parse_keyword(doc, match)
        if stamp is not None:
            found.append(stamp)
    for match in _UNVERIFIED.finditer(masked, doc.body_start):
        found.append(_make(doc, StampKind.UNVERIFIED, match.start(), match.end()))
    found.extend(_dated_citations(doc))
    found.extend(_frontmatter_stamps(doc))
    return sorted(found, key=lambda s: s.start)


def _make(
    doc: MarkdownDoc,
    kind: StampKind,
    start: int,
    end: int,
    *,
    month: Month | None = None,
    source: str | None = None,
    problem: str | None = None,
) -> Stamp:
    line, col = doc.position(start)
    end_line, end_col = doc.position(end)
    heading = doc.section_at(start)
    in_heading = any(h.start <= start < h.end for h in doc.headings)
    # A blockquote's ">" on a wrapped line is layout, not part of the stamp.
    text = " ".join(word for word in doc.text[start:end].split() if word.strip(">"))
    return Stamp(
        kind=kind,
        start=start,
        end=end,
        line=line,
        col=col,
        end_line=end_line,
        end_col=end_col,
        text=text[:200],
        section=heading.title if heading else None,
        in_heading=in_heading,
        month=month,
        source=source,
        problem=problem,
    )


def _inside_parens(masked: str, start: int) -> bool:
    window = masked[max(0, start - 300) : start]
    opened, closed = window.rfind("("), window.rfind(")")
    return opened > closed and "\n\n" not in window[opened:]


def _parse_keyword(doc: MarkdownDoc, keyword: re.Match[str]) -> Stamp | None:
    masked = doc.masked
    lookback = max(0, keyword.start() - 40)
    negation = _NEGATION.search(masked[lookback : keyword.start()])
    in_parens = _inside_parens(masked, keyword.start())
    gap_re = _GAP_IN_PARENS if in_parens else _GAP
    limit_words = _MAX_SOURCE_WORDS_IN_PARENS if in_parens else _MAX_SOURCE_WORDS
    limit = min(len(masked), keyword.end() + _WINDOW)
    position = keyword.end()
    if position < limit and masked[position] == ":":
        position += 1
    words: list[str] = []
    while position < limit:
        gap = gap_re.match(masked, position, limit)
        gap_end = gap.end() if gap else position
        if masked.count("\n", position, gap_end) >= 2:
            return None  # a blank line ends the paragraph, and the stamp with it
        token_match = _TOKEN.match(masked, gap_end, limit)
        if token_match is None:
            return None
        raw = token_match.group()
        token = raw.rstrip(".:")
        end = token_match.start() + len(token)
        verdict = _classify(token, masked, token_match.end(), limit)
        if verdict is not None:
            month, problem = verdict
            if words and words[0].lower() in _LINKING_WORDS:
                words = words[1:]  # "not re-verified since 2025-12": "since" is no source
            source = " ".join(words) or None
            start = keyword.start()
            if problem is not None:
                return _make(doc, StampKind.MALFORMED, start, end, source=source, problem=problem)
            if negation is not None:
                start = lookback + negation.start()
                return _make(doc, StampKind.NOT_REVERIFIED, start, end, month=month, source=source)
            return _make(doc, StampKind.VERIFIED, start, end, month=month, source=source)
        if not token or raw.endswith(".") or len(words) >= limit_words:
            return None  # the sentence ended, or too many words: prose, not a stamp
        words.append(token)
        position = token_match.end()
    return None


def _classify(
    token: str, masked: str, after: int, limit: int
) -> tuple[Month | None, str | None] | None:
    """None for a source word; (month, None) for a valid date; (None, why) for a bad one."""
    if not token[:1].isdigit():
        return _classify_word(token, masked, after, limit)
    match = _YEAR_MONTH.match(token)
    if match:
        month = Month.parse(f"{match.group(1)}-{match.group(2)}")
        if month is None:
            return None, f"month {match.group(2)} does not exist"
        day = match.group(3)
        if day is not None and not 1 <= int(day) <= 31:
            return None, f"day {day} does not exist"
        return month, None
    for pattern, why in _DATE_ATTEMPTS:
        if pattern.match(token):
            return None, why
    return None


def _classify_word(
    token: str, masked: str, after: int, limit: int
) -> tuple[Month | None, str | None] | None:
    lowered = token.lower()
    if lowered in _MONTH_NAMES:
        if lowered == "may":  # "verified may ..." is usually prose; "verified May 2026" is not
            gap = _GAP.match(masked, after, limit)
            follow = _TOKEN.match(masked, gap.end() if gap else after, limit)
            if not (follow and re.fullmatch(r"\d{4}", follow.group().rstrip(".:,"))):
                return None
        return None, "a month name; write the month as YYYY-MM"
    return None


def _dated_citations(doc: MarkdownDoc) -> list[Stamp]:
    found = []
    masked = doc.masked
    for match in _CITATION_DATE.finditer(masked, doc.body_start):
        window_start = max(doc.body_start, match.start() - 200)
        window = masked[window_start : match.start()]
        opened = window.rfind("(")
        if opened < 0 or ")" in window[opened:] or "\n\n" in window[opened:]:
            continue
        inside = window[opened + 1 :]
        if "verified" in inside.lower():
            continue  # a stamp, a negated stamp or an "unverified" marker: handled above
        month = Month.parse(match.group(1))
        source = " ".join(inside.split()).rstrip(",;:") or None
        start = window_start + opened + 1
        problem = None if month else f"month {match.group(1)[5:]} does not exist"
        found.append(
            _make(
                doc,
                StampKind.DATED_CITATION,
                start,
                match.end(1),
                month=month,
                source=source,
                problem=problem,
            )
        )
    return found


def _frontmatter_stamps(doc: MarkdownDoc) -> list[Stamp]:
    if doc.frontmatter is None:
        return []
    lines = doc.frontmatter.split("\n")
    found = []
    offset = 4  # just past the opening "---\n"
    offsets = []
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    for index, line in enumerate(lines):
        match = _FRONT_KEY.match(line)
        if not match:
            continue
        value = match.group(3).strip().strip("\"'")
        if value in ("", "null", "~"):
            continue
        start = offsets[index] + line.index("verified")
        end = offsets[index] + len(line.rstrip())
        url = _item_url(lines, index, len(match.group(1)) + len(match.group(2) or ""))
        month = Month.parse(value)
        if month is None:
            problem = "not a YYYY-MM month"
            stamp = _make(doc, StampKind.MALFORMED, start, end, source=url, problem=problem)
        else:
            stamp = _make(doc, StampKind.VERIFIED, start, end, month=month, source=url)
        found.append(_frontmatter(stamp))
    return found


def _frontmatter(stamp: Stamp) -> Stamp:
    from dataclasses import replace

    return replace(stamp, in_frontmatter=True, section=None, in_heading=False)


def _key_column(line: str) -> int:
    return len(line) - len(line.lstrip(" -"))


def _item_url(lines: list[str], index: int, indent: int) -> str | None:
    """The ``url`` of the YAML list item that holds line ``index`` (its keys at ``indent``)."""
    first = index
    while not lines[first].lstrip().startswith("-"):
        first -= 1
        if first < 0 or (lines[first].strip() and _key_column(lines[first]) < indent):
            return None
    last = first + 1
    while last < len(lines) and (
        not lines[last].strip()
        or (
            _key_column(lines[last]) >= indent
            and not (lines[last].lstrip().startswith("-") and _key_column(lines[last]) == indent)
        )
    ):
        last += 1
    for line in lines[first:last]:
        match = _FRONT_URL.match(line)
        if match:
            return match.group(1)
    return None

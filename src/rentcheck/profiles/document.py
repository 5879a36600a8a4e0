"""A markdown file as the profile checks see it: frontmatter, headings, fact blocks, and a
``masked`` copy of the text in which everything that is not prose (the frontmatter, fenced
code, inline code, HTML comments, link targets) is blanked out with spaces.

Masking keeps every offset and line number identical to the original text, so a finding
found in the masked copy points at the right place in the file. Nothing here uses a regex
that can backtrack badly: hostile input (megabyte lines, binary junk) is scanned linearly.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = ["Block", "Heading", "MarkdownDoc", "parse_markdown", "read_markdown"]

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*$")
_ITEM_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_TABLE_RE = re.compile(r"^ {0,3}\|")
_LINK_RE = re.compile(r"\[([^\[\]\n]{0,300})\]\(([^()\s]{0,1000})\)")
_NOT_NEWLINE = re.compile(r"[^\n]")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int
    start: int  # offset of the heading line
    end: int  # offset just past the heading text


@dataclass(frozen=True)
class Block:
    """One fact unit of prose: a list item, a whole table, or a paragraph."""

    kind: str  # "item" | "table" | "paragraph"
    start: int
    end: int
    line: int
    section: str | None  # title of the enclosing level-2 heading


@dataclass
class MarkdownDoc:
    path: str
    text: str
    frontmatter: str | None = None  # the YAML between the leading --- lines
    frontmatter_line: int = 0  # 1-based line of the first YAML line
    frontmatter_unclosed: bool = False
    body_start: int = 0
    masked: str = ""
    headings: list[Heading] = field(default_factory=list)
    _line_starts: list[int] = field(default_factory=list)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of an offset."""
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)]

    def section_at(self, offset: int) -> Heading | None:
        """The level-2 heading whose section contains ``offset``."""
        found = None
        for heading in self.headings:
            if heading.start > offset:
                break
            if heading.level == 2:
                found = heading
            elif heading.level == 1:
                found = None
        return found

    def blocks(self) -> list[Block]:
        return _blocks(self)


def read_markdown(path: str, display: str | None = None) -> MarkdownDoc:
    """Read any file as markdown; undecodable bytes become U+FFFD rather than an error."""
    with open(path, "rb") as handle:
        data = handle.read()
    return parse_markdown(data.decode("utf-8", errors="replace"), display or path)


def parse_markdown(text: str, path: str = "<text>") -> MarkdownDoc:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    doc = MarkdownDoc(path=path, text=text)
    doc._line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    _split_frontmatter(doc)
    spans: list[tuple[int, int]] = [(0, doc.body_start)] if doc.body_start else []
    spans += _fenced_code(text, doc.body_start)
    masked = _apply(text, spans)
    masked = _apply(masked, _comments(masked))
    masked = _apply(masked, _code_spans(masked, doc))
    masked = _apply(masked, _link_targets(masked))
    doc.masked = masked
    doc.headings = _headings(doc)
    return doc


def _split_frontmatter(doc: MarkdownDoc) -> None:
    text = doc.text
    if not text.startswith("---\n"):
        return
    for match in re.finditer(r"^(?:---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE):
        end = 4 + match.start()
        doc.frontmatter = text[4:end]
        doc.frontmatter_line = 2
        newline = text.find("\n", end)
        doc.body_start = len(text) if newline < 0 else newline + 1
        return
    doc.frontmatter_unclosed = True
    doc.body_start = len(text)


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for span_start, end in sorted(spans):
        start = max(span_start, last)  # spans may overlap (a comment inside a fence)
        if end <= start:
            continue
        parts.append(text[last:start])
        parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _fenced_code(text: str, start: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    fence: str | None = None
    opened = 0
    offset = start
    for line in text[start:].split("\n"):
        match = _FENCE_RE.match(line)
        if fence is None and match:
            fence, opened = match.group(1), offset
        elif fence is not None and match:
            closing = match.group(1)
            if closing[0] == fence[0] and len(closing) >= len(fence) and not line.strip(" `~"):
                spans.append((opened, offset + len(line)))
                fence = None
        offset += len(line) + 1
    if fence is not None:  # an unclosed fence runs to the end, as in CommonMark
        spans.append((opened, len(text)))
    return spans


def _comments(text: str) -> list[tuple[int, int]]:
    spans = []
    position = text.find("<!--")
    while position >= 0:
        close = text.find("-->", position + 4)
        end = len(text) if close < 0 else close + 3
        spans.append((position, end))
        position = text.find("<!--", end)
    return spans


def _code_spans(text: str, doc: MarkdownDoc) -> list[tuple[int, int]]:
    """Backtick runs paired with the next run of the same length on the same line."""
    runs = [(m.start(), m.end()) for m in re.finditer("`+", text)]
    following: list[int] = [-1] * len(runs)
    latest: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = latest.get(length, -1)
        latest[length] = index
    spans = []
    index = 0
    while index < len(runs):
        close = following[index]
        start = runs[index][0]
        if close >= 0 and doc.position(start)[0] == doc.position(runs[close][0])[0]:
            spans.append((start, runs[close][1]))
            index = close + 1
        else:
            index += 1
    return spans


def _link_targets(text: str) -> list[tuple[int, int]]:
    # `[label](url)` reads as `label`: the brackets and the target are not prose.
    spans = []
    for match in _LINK_RE.finditer(text):
        spans.append((match.start(), match.start() + 1))
        spans.append((match.end(1), match.end()))
    return spans


def _headings(doc: MarkdownDoc) -> list[Heading]:
    headings = []
    offset = doc.body_start
    masked = doc.masked
    for line in masked[doc.body_start :].split("\n"):
        if line.lstrip(" ").startswith("#"):
            match = _HEADING_RE.match(line)
            if match:
                number = doc.position(offset)[0]
                raw = doc.line_text(number)
                raw_match = _HEADING_RE.match(raw)
                title = (raw_match.group(2) if raw_match else match.group(2)).rstrip("#").strip()
                headings.append(
                    Heading(len(match.group(1)), title, number, offset, offset + len(line))
                )
        offset += len(line) + 1
    return headings


def _blocks(doc: MarkdownDoc) -> list[Block]:
    blocks: list[Block] = []
    kind: str | None = None
    start = end = 0
    offset = doc.body_start
    heading_starts = {h.start for h in doc.headings}

    def close() -> None:
        nonlocal kind
        if kind is not None:
            heading = doc.section_at(start)
            section = heading.title if heading else None
            blocks.append(Block(kind, start, end, doc.position(start)[0], section))
        kind = None

    for line in doc.masked[doc.body_start :].split("\n"):
        line_end = offset + len(line)
        if not line.strip() or offset in heading_starts:
            close()
        elif _TABLE_RE.match(line):
            if kind != "table":
                close()
                kind, start = "table", offset
            end = line_end
        elif _ITEM_RE.match(line):
            close()
            kind, start, end = "item", offset, line_end
        elif kind in ("item", "paragraph"):
            end = line_end
        else:
            close()
            kind, start, end = "paragraph", offset, line_end
        offset = line_end + 1
    close()
    return blocks

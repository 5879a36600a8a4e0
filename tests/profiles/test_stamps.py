"""Stamp detection: data-driven cases (tests/fixtures/profiles/stamps/*.md beside their
*.expected.json), hostile input that must not crash or crawl, and properties of any text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rentcheck.profiles.document import parse_markdown, read_markdown
from rentcheck.profiles.stamps import Stamp, StampKind, find_stamps
from tests.conftest import FIXTURES

CASES = sorted((FIXTURES / "profiles" / "stamps").glob("*.md"))


def _record(stamp: Stamp) -> dict[str, object]:
    return {
        "line": stamp.line,
        "col": stamp.col,
        "end_line": stamp.end_line,
        "kind": stamp.kind.value,
        "month": str(stamp.month) if stamp.month else None,
        "source": stamp.source,
        "text": stamp.text,
        "section_level": stamp.in_heading,
        "frontmatter": stamp.in_frontmatter,
    }


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture_stamps_match_expected(case: Path) -> None:
    expected = json.loads(case.with_suffix(".expected.json").read_text())
    assert [_record(s) for s in find_stamps(read_markdown(str(case)))] == expected


def _kinds(text: str) -> list[tuple[str, str | None]]:
    return [
        (s.kind.value, str(s.month) if s.month else None) for s in find_stamps(parse_markdown(text))
    ]


def test_wrapped_stamp_spans_the_line_break() -> None:
    (stamp,) = find_stamps(
        parse_markdown("- billed while stopped (verified\n  acme-pricing\n  2026-06).\n")
    )
    assert (stamp.line, stamp.end_line, stamp.source, str(stamp.month)) == (
        1,
        3,
        "acme-pricing",
        "2026-06",
    )


def test_several_stamps_per_line_are_each_found() -> None:
    text = "a (verified x 2026-01) b (verified y 2026-02) c verified 2026-03\n"
    assert _kinds(text) == [
        ("verified", "2026-01"),
        ("verified", "2026-02"),
        ("verified", "2026-03"),
    ]


def test_other_dates_on_a_stamped_line_are_not_stamps() -> None:
    text = "added 2026-04 (verified acme 2026-06), moved 2025-01, see 2024-03.\n"
    assert _kinds(text) == [("verified", "2026-06")]


def test_code_is_ignored_but_prose_around_it_is_not() -> None:
    text = "```\nverified 2020-01\n```\n`verified 2020-02` then verified 2026-06\n"
    assert _kinds(text) == [("verified", "2026-06")]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("(verified 2026-13)", "malformed"),
        ("(verified June)", "malformed"),
        ("(not re-verified since 2025-12)", "not-re-verified"),
        ("(unverified)", "unverified"),
        ("(filesystems doc 2026-06)", "dated-citation"),
        ("filter with verified=true", None),
        ("the pull was verified before teardown.", None),
        ("PULL VERIFIED", None),
    ],
)
def test_each_kind_is_told_apart(text: str, kind: str | None) -> None:
    assert [k for k, _ in _kinds(text + "\n")] == ([kind] if kind else [])


def test_too_many_words_between_keyword_and_date_is_prose() -> None:
    assert _kinds("verified by the team and then shipped 2026-06\n") == []
    # Inside parentheses a longer source is allowed, up to the closing parenthesis.
    assert _kinds("(verified on the acme console page 2026-06)\n") == [("verified", "2026-06")]


def test_huge_lines_and_hostile_markdown_do_not_crash_or_crawl() -> None:
    # One line of about 2 MB: keyword floods, unbalanced parentheses, backtick runs, dates
    # without months and unclosed comments, each of which could make a naive scanner
    # quadratic or recursive.
    hostile = (
        "verified " * 50_000
        + "(" * 100_000
        + "`" * 50_001
        + "verified 2026-" * 20_000
        + "("
        + "a " * 100_000
        + "2026-06)"
    )
    stamps = find_stamps(parse_markdown(hostile + "\n(verified acme 2026-06)\n"))
    assert [(s.line, s.kind, s.source) for s in stamps] == [(2, StampKind.VERIFIED, "acme")]
    # Thousands of unclosed comment openers hide everything after them, as a renderer would.
    assert find_stamps(parse_markdown("<!--" * 10_000 + "\n(verified acme 2026-06)\n")) == []


def test_binary_junk_is_read_without_error(tmp_path: Path) -> None:
    # Deterministic bytes of every value, NULs and invalid UTF-8 included.
    junk = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(10_000))
    path = tmp_path / "junk.md"
    path.write_bytes(b"\x00\xff\xfe" + junk + b"\n(verified acme 2026-06)\n" + junk)
    stamps = find_stamps(read_markdown(str(path)))
    assert any(s.kind is StampKind.VERIFIED and str(s.month) == "2026-06" for s in stamps)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "verified",
                " ",
                "\n",
                "\n\n",
                "(",
                ")",
                "2026-06",
                "2026-13",
                "June",
                "`",
                "```",
                "not re-",
                "un",
                "acme-docs",
                "|",
                "---\n",
                "# ",
                "## STORAGE",
                "<!--",
                "-->",
                "x",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_any_text_gives_consistent_stamps(text: str) -> None:
    doc = parse_markdown(text)
    lines = doc.text.count("\n") + 1
    for stamp in find_stamps(doc):
        assert 1 <= stamp.line <= stamp.end_line <= lines
        assert (stamp.month is not None) == (
            stamp.kind in (StampKind.VERIFIED, StampKind.NOT_REVERIFIED)
            or (stamp.kind is StampKind.DATED_CITATION and stamp.problem is None)
        )
        if stamp.kind is StampKind.MALFORMED:
            assert stamp.problem

"""Inline suppressions in each file's own comment syntax, and RC900/RC901 about them."""

from __future__ import annotations

from pathlib import Path

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.lint.source import SourceFile
from rentcheck.lint.suppress import parse_directives
from rentcheck.registry import load_rule_set


def _check(
    tmp_path: Path, name: str, data: bytes, mode: int = 0o755, **config: object
) -> list[str]:
    path = tmp_path / name
    path.write_bytes(data)
    path.chmod(mode)
    linter = Linter(Config(root=str(tmp_path), **config), load_rule_set(with_plugins=False))  # type: ignore[arg-type]
    return sorted(f"{f.line} {f.code}" for f in linter.run([str(path)]).findings)


def test_trailing_directive_covers_its_own_line(tmp_path: Path) -> None:
    data = b"#!/bin/sh\necho a\r\necho b  # rentcheck: ignore[RC101]\r\n"
    # The first CRLF (line 2) is where RC101 reports; the directive on line 3 does not cover it.
    assert _check(tmp_path, "a.sh", data) == ["2 RC101", "3 RC900"]


def test_own_line_directive_covers_the_next_command(tmp_path: Path) -> None:
    data = b"#!/bin/sh\n# rentcheck: ignore[RC101]\n\n# why: vendored file\necho a\r\necho b\n"
    assert _check(tmp_path, "a.sh", data) == []


def test_file_level_directive_and_family_prefix(tmp_path: Path) -> None:
    data = b"#!/bin/sh\r\n# rentcheck: ignore-file[RC1xx]\r\necho a\r\n"
    assert _check(tmp_path, "a.sh", data, mode=0o644) == []


def test_blanket_ignore_and_its_unused_report(tmp_path: Path) -> None:
    assert _check(tmp_path, "a.sh", b"#!/bin/sh\r\n# rentcheck: ignore-file\r\n") == []
    assert _check(tmp_path, "b.sh", b"#!/bin/sh\n# rentcheck: ignore-file\n") == ["2 RC900"]


def test_unused_is_not_reported_for_rules_that_did_not_run(tmp_path: Path) -> None:
    data = b"#!/bin/sh\necho a  # rentcheck: ignore[RC103]\n"
    assert _check(tmp_path, "a.sh", data, select=("RC101", "RC900")) == []
    assert _check(tmp_path, "b.sh", data, preview=True) == ["2 RC900"]  # RC103 is preview


def test_markdown_directive_form(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(
        b"# Title\n<!-- rentcheck: ignore-file[RC7] -->\n\n"
        b"text\n<!-- rentcheck: ignore[RC103] -->\n"
    )
    source = SourceFile.read("README.md", str(path))
    directives = parse_directives(source)
    assert [(d.line, d.file_level, d.codes, d.misplaced) for d in directives] == [
        (2, True, ("RC7",), True),  # after the "# Title" heading, which is markdown text
        (5, False, ("RC103",), False),
    ]


def test_hash_in_markdown_is_not_a_directive(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(b"run `cmd  # rentcheck: ignore[RC101]` to see\n")
    assert parse_directives(SourceFile.read("notes.md", str(path))) == []


def test_python_directives_must_be_real_comments(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_bytes(
        b"#!/usr/bin/env python3\n"
        b'DOC = "# rentcheck: ignore[RC101]"\n'
        b"x = 1  # rentcheck: ignore[RC103]\n"
    )
    source = SourceFile.read("tool.py", str(path))
    assert [d.line for d in parse_directives(source)] == [3]


def test_files_no_rule_looks_at_are_not_checked_for_directives(tmp_path: Path) -> None:
    # A README that documents the syntax is not a file with a stale suppression.
    assert _check(tmp_path, "notes.txt", b"write `# rentcheck: ignore[RC101]`\n", mode=0o644) == []

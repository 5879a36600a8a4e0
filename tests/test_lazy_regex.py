"""lazy_regex: a pattern compiled at first use answers exactly as re.compile's would."""

from __future__ import annotations

import re

import pytest

from rentcheck.lazy_regex import lazy_regex


def test_same_answers_as_re_compile() -> None:
    lazy, eager = lazy_regex(r"(\w+)=(\d+)", re.I), re.compile(r"(\w+)=(\d+)", re.I)
    text = "a=1 B=22 c=x"
    assert lazy.pattern == eager.pattern and lazy.flags == eager.flags
    assert lazy.groups == eager.groups == 2
    assert [m.groups() for m in lazy.finditer(text)] == [m.groups() for m in eager.finditer(text)]
    assert lazy.search(text).group(0) == "a=1"  # type: ignore[union-attr]
    assert lazy.match("zz") is None and lazy.fullmatch("k=7") is not None
    assert lazy.sub(r"\2", text) == eager.sub(r"\2", text) == "1 22 c=x"
    assert lazy.findall(text) == [("a", "1"), ("B", "22")]
    assert lazy.split(text) == eager.split(text)


def test_bytes_patterns() -> None:
    lazy = lazy_regex(rb"#\s*rentcheck:\s*(ignore)")
    assert lazy.search(b"x  # rentcheck: ignore").group(1) == b"ignore"  # type: ignore[union-attr]


def test_not_compiled_until_used_and_errors_then() -> None:
    broken = lazy_regex(r"(unclosed")
    with pytest.raises(re.error):
        broken.search("x")


def test_copies_and_pickles_are_patterns_too() -> None:
    import copy
    import pickle

    lazy = lazy_regex(r"a(b)")
    for clone in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):  # noqa: S301 - our own bytes
        assert clone.search("xab").group(1) == "b"  # type: ignore[union-attr]

"""Every registered rule is exercised by some test: its code appears in a test or an expected
fixture (smoke's failure classes are asserted by their class word, which maps to one code)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _test_text() -> str:
    parts = []
    for path in TESTS.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                parts.append(path.read_text(errors="ignore"))
            except OSError:
                continue
    return "\n".join(parts)


def test_every_registered_code_is_named_by_a_test() -> None:
    from rentcheck.registry import all_rules
    from rentcheck.run.rules import SMOKE_CLASSES

    text = _test_text()
    by_class = {rule.code: word for word, rule in SMOKE_CLASSES.items()}
    unnamed = [
        code
        for code in all_rules(with_plugins=False)
        if code not in text and f'"{by_class.get(code, code)}"' not in text
    ]
    assert unnamed == [], "rules no test names: add a test that makes each one fire"

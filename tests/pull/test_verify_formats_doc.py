"""docs/verify-formats.md is the page a user is sent to for what verify accepts: it names every
preset, every verify code it refuses with exists, and the README, ARCHITECTURE.md, the
settings docstring and RC514's fix lead to it or to the presets."""

from __future__ import annotations

import re
from pathlib import Path

from rentcheck.pull import settings
from rentcheck.pull.formats.policy import PRESETS
from rentcheck.pull.rules import PULL_RULES, UNSAFE_PICKLE

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "verify-formats.md").read_text(encoding="utf-8")


def test_every_preset_is_named_where_a_user_looks() -> None:
    fix = next(rule.fix for rule in PULL_RULES if rule.code == UNSAFE_PICKLE)
    for name in PRESETS:
        assert f"`{name}`" in PAGE, name
        assert f"``{name}``" in (settings.__doc__ or ""), name
        assert name in fix, name


def test_every_code_the_page_names_is_a_verify_rule() -> None:
    known = {rule.code for rule in PULL_RULES}
    named = set(re.findall(r"RC5\d\d", PAGE))
    assert named and named <= known, named - known


def test_the_page_is_linked_from_the_readme_and_the_architecture() -> None:
    assert "docs/verify-formats.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "verify-formats.md" in (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")

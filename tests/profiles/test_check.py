"""`profiles check` on one file: frontmatter problems with line numbers, the eight sections,
stamps that are malformed or name no known source, and money facts without a stamp."""

from __future__ import annotations

from pathlib import Path

import pytest

from rentcheck.profiles.check import SECTIONS, check_profile_file, source_matches
from tests.conftest import FIXTURES

ACME = (FIXTURES / "profiles" / "user" / "acme.md").read_text()


def _check(tmp_path: Path, text: str, name: str = "acme") -> list[tuple[str, int | None, str]]:
    path = tmp_path / f"{name}.md"
    path.write_text(text)
    result = check_profile_file(str(path), path.name)
    return [(f.code, f.line, f.message) for f in result.findings]


def _replace(old: str, new: str, text: str = ACME) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_the_fixture_profile_is_clean(tmp_path: Path) -> None:
    path = FIXTURES / "profiles" / "user" / "acme.md"
    result = check_profile_file(str(path))
    assert result.findings == [] and result.profile is not None
    assert result.profile.platform == "acme" and result.profile.durable_tier is not None


def test_a_bad_value_is_reported_on_its_own_line(tmp_path: Path) -> None:
    text = _replace("    shared: true\n", '    shared: "host-dependent"\n')
    findings = _check(tmp_path, text)
    line = text.splitlines().index('    shared: "host-dependent"') + 1
    assert findings == [
        (
            "RC701",
            line,
            "tiers[1].shared: must be true, false or null, not a string ('host-dependent')",
        )
    ]


def test_platform_must_match_the_file_name(tmp_path: Path) -> None:
    ((code, line, message),) = _check(tmp_path, ACME, name="other")
    assert (code, line) == ("RC701", 2) and "other.md" in message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("# no frontmatter\n", "no YAML frontmatter"),
        ("---\nplatform: acme\n", "not closed"),
        ("---\nplatform: [acme\n---\n", "not valid YAML"),
        ("---\nbase: &b {x: 1}\nother: *b\n---\n", "aliases"),
    ],
)
def test_unreadable_frontmatter(tmp_path: Path, text: str, needle: str) -> None:
    findings = [f for f in _check(tmp_path, text) if f[0] == "RC701"]
    assert len(findings) == 1 and needle in findings[0][2]


def test_duplicate_keys_are_not_silently_last_wins(tmp_path: Path) -> None:
    text = _replace(
        "    survives_stop: true\n", "    survives_stop: true\n    survives_stop: false\n"
    )
    findings = _check(tmp_path, text)
    assert [f[0] for f in findings] == ["RC701"] and "tiers.0.survives_stop" in findings[0][2]


def _sections(tmp_path: Path, text: str) -> list[str]:
    return [m for code, _, m in _check(tmp_path, text) if code == "RC702"]


def test_sections_missing_out_of_order_duplicated_unknown_and_empty(tmp_path: Path) -> None:
    assert _sections(tmp_path, _replace("## DETACH\n", "## DAEMON\n")) == [
        "unexpected section 'DAEMON'; a profile has exactly these: " + ", ".join(SECTIONS),
        "section DETACH is missing (`## DETACH`)",
    ]
    swapped = ACME.replace("## LAUNCH", "## @@").replace("## NETWORK", "## LAUNCH")
    swapped = swapped.replace("## @@", "## NETWORK")
    assert any("comes after" in m for m in _sections(tmp_path, swapped))
    twice = _replace("## GOTCHAS\n", "## GOTCHAS\n\n- x\n\n## DETACH\n")
    assert any("appears twice" in m for m in _sections(tmp_path, twice))
    empty = _replace("- tmux, then nohup; neither survives a reboot.\n", "")
    assert _sections(tmp_path, empty) == [
        "section DETACH is empty; say what is known, or that nothing is"
    ]


def test_numbered_and_stamped_headings_count_as_the_section(tmp_path: Path) -> None:
    text = _replace("## LAUNCH", "## 1. Launch").replace(
        "## TEARDOWN + BILLING", "## TEARDOWN + BILLING (verified acme-pricing 2026-09)"
    )
    assert _sections(tmp_path, text) == []


def test_headings_in_code_blocks_are_not_sections(tmp_path: Path) -> None:
    text = _replace("## GOTCHAS\n", "## GOTCHAS\n\n```\n## LAUNCH\n```\n")
    assert _sections(tmp_path, text) == []


def test_money_fact_without_a_stamp(tmp_path: Path) -> None:
    text = _replace("- Egress is free (unverified).", "- Egress is billed at $0.01 per GB.")
    findings = [f for f in _check(tmp_path, text) if f[0] == "RC703"]
    assert len(findings) == 1 and "'billed'" in findings[0][2]


@pytest.mark.parametrize(
    "fact",
    [
        "- Egress is billed at $0.01 per GB (verified acme-pricing 2026-09).",
        "- Egress is billed at $0.01 per GB (unverified).",
        "- Egress is billed at $0.01 per GB (not re-verified since 2026-01).",
        "- Whether egress is billed is not documented.",
        "- Then delete the bucket yourself.",  # advice, not a fact
    ],
)
def test_stamped_marked_unknown_or_advice_is_fine(tmp_path: Path, fact: str) -> None:
    text = _replace("- Egress is free (unverified).", fact)
    assert [f for f in _check(tmp_path, text) if f[0] == "RC703"] == []


def test_section_level_stamp_covers_its_section_only(tmp_path: Path) -> None:
    unstamped = _replace("- Egress is free (unverified).", "- Egress is billed per GB.")
    covered = unstamped.replace("## NETWORK", "## NETWORK (verified acme-pricing 2026-09)")
    assert [f for f in _check(tmp_path, covered) if f[0] == "RC703"] == []
    elsewhere = unstamped.replace("## LAUNCH", "## LAUNCH (verified acme-pricing 2026-09)")
    assert [f[0] for f in _check(tmp_path, elsewhere)] == ["RC703"]


def test_a_table_is_stamped_by_the_sentence_under_it(tmp_path: Path) -> None:
    # The fixture's storage table says "deleted" and relies on the bullet right after it.
    text = _replace(
        "- Terminate deletes the root disk; the bucket outlives it",
        "Prose without a stamp.\n\n- Terminate deletes the root disk",
    )
    assert [f[0] for f in _check(tmp_path, text)] == ["RC703"]


def test_detach_and_overrides_are_about_processes_and_editing(tmp_path: Path) -> None:
    text = _replace("## OVERRIDES\n", "## OVERRIDES\n\nBilling of your copy is deleted.\n")
    assert _check(tmp_path, text) == []


def test_stamp_sources_must_name_a_frontmatter_source(tmp_path: Path) -> None:
    text = _replace("(verified acme-pricing 2026-09).", "(verified acme-pricnig 2026-09).")
    text = _replace("(verified acme-storage-buckets 2026-09)", "(verified 2026-09)", text)
    messages = [m for code, _, m in _check(tmp_path, text) if code == "RC704"]
    assert len(messages) == 2
    assert "names no source" in messages[0] and "'acme-pricnig' matches none" in messages[1]


def test_malformed_stamp_is_a_format_error(tmp_path: Path) -> None:
    text = _replace("(verified acme-pricing 2026-09).", "(verified acme-pricing Sept 2026).")
    assert [f[0] for f in _check(tmp_path, text)] == ["RC712"]


@pytest.mark.parametrize(
    ("name", "url", "expected"),
    [
        (
            "runpod-network-volumes",
            "https://docs.runpod.io/pods/storage/create-network-volumes",
            True,
        ),
        ("velinxs", "https://medium.com/@velinxs", True),
        ("colab-faq", "https://research.google.com/colaboratory/faq.html", True),
        ("runpod-pricnig", "https://docs.runpod.io/pods/pricing", False),
        ("---", "https://x.example", False),
    ],
)
def test_source_name_matching(name: str, url: str, expected: bool) -> None:
    assert source_matches(name, url) is expected

"""`rentcheck stale`: ages judged against --today / RENTCHECK_TODAY, thresholds from flags or
config, every kind of stamp reported with its own rule, the effective today in the JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

NOTES = """# Facts

- A (verified acme-docs 2026-04).
- B (verified acme-docs 2026-05).
- C (verified acme-docs 2026-06) and D (verified acme-docs 2026-11).
- E (verified acme-docs 2026-12).
- F (verified acme-docs 2026-13).
- G (not re-verified since 2025-12).
- H (filesystems doc 2026-06).
- I (unverified).
"""


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text(NOTES)
    (tmp_path / "docs" / "skip.txt").write_text("verified 2000-01\n")
    return tmp_path


def _run(cli, cwd: Path, *args: str) -> tuple[int, dict]:
    result = cli("stale", *args, "--output-format", "json", cwd=cwd)
    return result.code, json.loads(result.out)


def test_each_kind_gets_its_own_rule_and_the_json_records_today(cli, notes: Path) -> None:
    code, doc = _run(cli, notes, "docs", "--today", "2026-11")
    assert code == 1
    assert doc["summary"]["by_code"] == {
        "RC710": 1,  # 2026-04: seven months old
        "RC711": 1,  # 2026-05: stale from 2026-12
        "RC712": 1,
        "RC713": 1,
        "RC714": 1,
        "RC715": 1,
    }
    staleness = doc["staleness"]
    assert staleness["today"] == "2026-11" and staleness["max_age_months"] == 6
    assert staleness["counts"] == {
        "dated-citation": 1,
        "fresh": 2,
        "future": 1,
        "malformed": 1,
        "not-re-verified": 1,
        "stale": 1,
        "stale-soon": 1,
        "unverified": 1,
    }
    (entry,) = staleness["files"]
    assert entry["path"] == "docs/notes.md"
    assert entry["stamps"][0] == {
        "line": 3,
        "col": 6,
        "kind": "verified",
        "status": "stale",
        "text": "verified acme-docs 2026-04",
        "month": "2026-04",
        "age_months": 7,
        "source": "acme-docs",
        "section": None,
        "section_level": False,
        "frontmatter": False,
    }
    severities = {r["code"]: r["severity"] for r in doc["results"]}
    assert severities == {
        "RC710": "error",
        "RC711": "warning",
        "RC712": "error",
        "RC713": "error",
        "RC714": "note",
        "RC715": "note",
    }


def test_thresholds_from_flags(cli, notes: Path) -> None:
    _, doc = _run(cli, notes, "docs/notes.md", "--today", "2026-11", "--max-age-months", "12")
    assert "RC710" not in doc["summary"]["by_code"] and "RC711" not in doc["summary"]["by_code"]
    _, doc = _run(cli, notes, "docs/notes.md", "--today", "2026-11", "--warn-months", "0")
    assert "RC711" not in doc["summary"]["by_code"] and doc["summary"]["by_code"]["RC710"] == 1


def test_today_from_the_environment(cli, notes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RENTCHECK_TODAY", "2026-06")
    _, doc = _run(cli, notes, "docs")
    assert doc["staleness"]["today"] == "2026-06"
    # D (2026-11) and E (2026-12) are in the future; a dated citation is never aged.
    assert doc["summary"]["by_code"]["RC713"] == 2


def test_settings_from_config(cli, notes: Path) -> None:
    (notes / "rentcheck.yaml").write_text(
        "profiles:\n  max-age-months: 3\n  warn-months: 0\n  dated-without-verified: off\n"
    )
    _, doc = _run(cli, notes, "docs", "--today", "2026-09")
    assert (
        doc["staleness"]["max_age_months"] == 3
        and doc["staleness"]["dated_without_verified"] == "off"
    )
    assert doc["summary"]["by_code"]["RC710"] == 2 and "RC715" not in doc["summary"]["by_code"]
    (notes / "rentcheck.yaml").write_text("profiles:\n  dated-without-verified: warning\n")
    _, doc = _run(cli, notes, "docs", "--today", "2026-06")
    assert {r["severity"] for r in doc["results"] if r["code"] == "RC715"} == {"warning"}


def test_fail_level_and_ignore(cli, notes: Path) -> None:
    (notes / "only.md").write_text("- (verified acme 2026-05)\n")
    assert cli("stale", "only.md", "--today", "2026-11", cwd=notes).code == 1
    assert (
        cli("stale", "only.md", "--today", "2026-11", "--fail-level", "error", cwd=notes).code == 0
    )
    # The stale gate's own selection is in its section; the top level is lint's.
    (notes / "rentcheck.yaml").write_text("profiles:\n  ignore: [RC711]\n")
    assert cli("stale", "only.md", "--today", "2026-11", cwd=notes).code == 0
    (notes / "rentcheck.yaml").write_text("ignore: [RC711]\n")
    refused = cli("stale", "only.md", "--today", "2026-11", cwd=notes)
    assert refused.code == 2
    assert "[tool.rentcheck.profiles] ignore" in refused.err


@pytest.mark.parametrize(
    ("args", "config", "needle"),
    [
        (("--today", "2026-13"), "", "--today is '2026-13'"),
        (("--max-age-months", "-1"), "", "--max-age-months must be"),
        ((), "profiles:\n  warn-months: soon\n", "profiles.warn-months"),
        ((), "profiles:\n  dated-without-verified: loud\n", "use off, note, warning or error"),
        (("empty",), "", "no markdown files"),
    ],
)
def test_bad_input_is_exit_2(
    cli, notes: Path, args: tuple[str, ...], config: str, needle: str
) -> None:
    (notes / "empty").mkdir()
    if config:
        (notes / "rentcheck.yaml").write_text(config)
    paths = () if "empty" in args else ("docs",)
    result = cli("stale", *paths, *args, cwd=notes)
    assert result.code == 2 and needle in result.err


def test_default_is_your_profiles_when_configured(cli, tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    shutil.copy(FIXTURES / "profiles" / "user" / "acme.md", tmp_path / "ops" / "acme.md")
    (tmp_path / "rentcheck.yaml").write_text('profiles:\n  paths: ["ops"]\n')
    code, doc = _run(cli, tmp_path, "--today", "2027-06")
    assert code == 1 and [f["path"] for f in doc["staleness"]["files"]] == ["ops/acme.md"]
    # The frontmatter `sources[].verified` months age like body stamps.
    assert sum(1 for s in doc["staleness"]["files"][0]["stamps"] if s["frontmatter"]) == 2
    assert doc["summary"]["by_code"] == {"RC710": 5}


def test_without_paths_a_project_with_no_profiles_is_told_so(cli, tmp_path: Path) -> None:
    """Not 217 warnings about the profiles shipped inside the package: nothing of its own,
    and checking nothing is no pass (RC914 names the key that gives it something)."""
    result = cli("stale", "--today", "2030-01", cwd=tmp_path)
    assert result.code == 1, result.out + result.err
    assert "RC914 the stale gate saw 0 profiles checked" in result.out
    assert "profiles.paths" in result.out
    assert "RC71" not in result.out
    assert not (tmp_path / ".rentcheck").exists()  # nothing proved, nothing recorded


def test_without_paths_the_projects_own_profile_dirs_are_checked(cli, notes: Path) -> None:
    (notes / "rentcheck.yaml").write_text('profiles:\n  paths: ["docs"]\n')
    code, doc = _run(cli, notes, "--today", "2026-11")
    assert code == 1
    assert [f["path"] for f in doc["staleness"]["files"]] == ["docs/notes.md"]
    assert "RC710" in doc["summary"]["by_code"]

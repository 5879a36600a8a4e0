"""docs/rules: one generated page per built-in rule, held to the rule metadata; doc links."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from rentcheck.registry import load_rule_set
from rentcheck.report.ruledoc import DOCS_BASE_URL, doc_filename, rule_markdown
from tests.conftest import REPO_ROOT, make_repo

DOCS = REPO_ROOT / "docs" / "rules"
SCRIPT = REPO_ROOT / "scripts" / "rule_docs.py"


def _builtin() -> list[object]:
    rule_set = load_rule_set(with_plugins=False)
    return [r for c, r in rule_set.rules.items() if rule_set.origins[c] == "rentcheck"]


def _check(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--dir", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_registered_rule_has_its_page_and_an_index_entry() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    rules = _builtin()
    assert len(rules) > 100
    for rule in rules:
        page = DOCS / doc_filename(rule)  # type: ignore[arg-type]
        assert page.is_file(), f"{page} missing: run python scripts/rule_docs.py"
        assert f"]({doc_filename(rule)})" in index  # type: ignore[arg-type]


def test_committed_pages_are_what_the_metadata_generates() -> None:
    proc = _check(DOCS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_names_a_stale_a_missing_and_an_orphaned_page(tmp_path: Path) -> None:
    copy = tmp_path / "rules"
    shutil.copytree(DOCS, copy)
    (copy / "RC101-crlf-line-endings.md").write_text("# RC101 edited by hand\n")
    (copy / "RC102-gitattributes-missing-eol-lf.md").unlink()
    (copy / "RC999-a-rule-that-was-removed.md").write_text("# gone\n")
    proc = _check(copy)
    assert proc.returncode == 1
    assert "RC101-crlf-line-endings.md: out of date" in proc.stdout
    assert "RC102-gitattributes-missing-eol-lf.md: missing" in proc.stdout
    assert "RC999-a-rule-that-was-removed.md: no rule has this page" in proc.stdout
    # Regenerating repairs all three (and removes only its own orphaned page).
    (copy / "notes.txt").write_text("mine\n")
    subprocess.run([sys.executable, str(SCRIPT), "--dir", str(copy)], check=True, timeout=120)
    assert _check(copy).returncode == 0
    assert (copy / "notes.txt").read_text() == "mine\n"


def test_rule_format_markdown_prints_the_page(cli) -> None:
    result = cli("rule", "RC101", "--format", "markdown")
    assert result.code == 0
    assert result.out == (DOCS / "RC101-crlf-line-endings.md").read_text(encoding="utf-8")
    assert result.out.startswith("# RC101 crlf-line-endings\n")
    described = json.loads(cli("rule", "crlf-line-endings", "--format", "json").out)
    assert described["doc_url"] == f"{DOCS_BASE_URL}/RC101-crlf-line-endings.md"


def test_a_fence_inside_an_example_cannot_close_the_code_block() -> None:
    rule = next(r for r in _builtin() if r.code == "RC101")  # type: ignore[attr-defined]
    tricky = type(rule)(**{**rule.__dict__, "example_bad": "```\nrm -rf /\n```"})  # type: ignore[arg-type]
    page = rule_markdown(tricky)
    assert "````sh\n```\nrm -rf /\n```\n````" in page


def _local_page(url: str) -> Path:
    assert url.startswith(DOCS_BASE_URL + "/")
    return DOCS / url.removeprefix(DOCS_BASE_URL + "/")


def test_json_and_sarif_findings_link_to_an_existing_page(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"run.sh": b"#!/bin/bash\r\necho ok\r\n"}, executable=("run.sh",)
    )
    doc = json.loads(cli("check", "--output-format", "json", cwd=repo).out)
    assert doc["results"]
    for result in doc["results"]:
        page = _local_page(result["doc_url"])
        assert page.is_file() and page.name.startswith(result["code"] + "-")
    sarif = json.loads(cli("check", "--output-format", "sarif", cwd=repo).out)
    run = sarif["runs"][0]
    for result in run["results"]:
        assert _local_page(result["properties"]["doc_url"]).is_file()
        rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
        assert rule["helpUri"] == result["properties"]["doc_url"]

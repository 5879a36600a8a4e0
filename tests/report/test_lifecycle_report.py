"""``rentcheck report``: the HTML page in a real headless Chromium, the markdown's size cap."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rentcheck.report.lifecycle import gather
from rentcheck.report.markdown import MAX_BYTES, render_markdown
from rentcheck.report.ruledoc import DOCS_BASE_URL
from tests.conftest import make_repo
from tests.report.chromium import chromium_binary, load_page

HOSTILE = "<script>alert(1)</script>\x1b[31m|red|\n## not a heading"


def _hostile_report(count: int = 1, message: str = HOSTILE) -> dict[str, object]:
    """A watch report as a compromised box could shape it: markup, escapes, a fake link."""
    finding = {
        "code": "RC354",
        "severity": "warning",
        "message": message,
        "path": "logs/<img src=x onerror=alert(2)>.log",
        "line": 3,
        "host": "box",
        "doc_url": "javascript:alert(3)",  # never used: links come from rentcheck's table
    }
    return {
        "schema": "rentcheck/report/v1",
        "command": "watch",
        "gate": {"name": "watch", "phase": "watch", "passed": False},
        "results": [dict(finding, line=i + 1) for i in range(count)],
    }


@pytest.fixture
def project(cli, tmp_path: Path) -> Path:
    """A project that ran lint (a finding), an audit with a budget and a verify, for real."""
    repo = make_repo(
        tmp_path / "proj", {"run.sh": b"#!/bin/bash\r\necho ok\r\n"}, executable=("run.sh",)
    )
    assert cli("check", cwd=repo).code == 1
    data = tmp_path / "data"
    data.mkdir()
    audit = cli("audit", "--host", "local", "--path", f"data={data}", "--budget", "1KiB", cwd=repo)
    assert audit.code in (0, 1), audit.err
    pulled = tmp_path / "pulled"
    (pulled / "ckpt").mkdir(parents=True)
    (pulled / "ckpt" / "step-8.txt").write_bytes(b"weights" * 100)
    (pulled / "train.log").write_text("step 8 loss 0.1\n")
    assert cli("manifest", "build", str(pulled), cwd=repo).code == 0
    verify = cli("verify", str(pulled), "--manifest", str(pulled / "PULL_MANIFEST.json"), cwd=repo)
    assert verify.code == 0, verify.out + verify.err
    (tmp_path / "watch.json").write_text(json.dumps(_hostile_report()))
    return repo


def test_html_report_loads_in_headless_chromium_without_console_errors(
    cli, project: Path, tmp_path: Path
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium (`apt-get install -y chromium`; .ci/run installs it)")
    page = tmp_path / "report.html"
    result = cli(
        "report", "--html", str(page), "--input", str(tmp_path / "watch.json"), cwd=project
    )
    assert result.code == 0, result.err
    text = page.read_text(encoding="utf-8")
    # Self-contained: nothing to fetch, no script; the only links are rule pages.
    assert not re.search(r"<[a-z]+[^>]*\ssrc=", text)
    assert "<script" not in text and "\x1b" not in text
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert hrefs and all(h.startswith(DOCS_BASE_URL + "/RC") for h in hrefs)

    shot = tmp_path / "report.png"
    checks = (
        "document.querySelectorAll('script').length",
        "document.querySelectorAll('#timeline .gate').length",
        "document.querySelectorAll('#mounts .bar').length",
        "document.querySelectorAll('#verify tbody tr').length",
        "Array.from(document.querySelectorAll('#findings h3')).map(h => h.textContent)",
        "document.body.innerText.includes('<script>alert(1)</script>')",
        "document.querySelectorAll('img').length",
    )
    load = load_page(binary, page.as_uri(), str(shot), checks)
    print(f"screenshot of the report: {shot}")  # kept with the test's tmp dir
    assert load.errors == []
    scripts, gates, bars, verified, rule_titles, hostile_shown, images = load.values
    assert scripts == 0 and images == 0
    assert gates >= 9  # every gate of the table, run or not
    assert bars == 1  # the one audited path, with its budget
    assert verified == 2  # ckpt/step-8.txt and train.log (the manifest is not in its roster)
    assert any(t.startswith("RC101 crlf-line-endings") for t in rule_titles)
    assert any(t.startswith("RC354") for t in rule_titles)
    assert hostile_shown is True  # shown as text, not run
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_console_check_can_fail(tmp_path: Path) -> None:
    """The detector itself: a page with a console error and a blocked network load fails."""
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium")
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<html><head><meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
        ' script-src \'unsafe-inline\'"></head><body><img src="http://example.invalid/x.png">'
        '<script>console.error("boom")</script></body></html>'
    )
    load = load_page(binary, bad.as_uri(), str(tmp_path / "bad.png"))
    assert any("boom" in e for e in load.errors)
    assert any("example.invalid" in e for e in load.errors)


def _cells(line: str) -> int:
    """Table cells of a markdown row: pipes not escaped by a backslash."""
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_markdown_stays_under_1_mib_with_every_line_whole(project: Path, tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(_hostile_report(count=20_000, message=HOSTILE * 20)))
    text = render_markdown(gather(str(project), [str(huge)]))
    size = len(text.encode("utf-8"))
    assert 900_000 < size < MAX_BYTES < 1024 * 1024
    lines = text.splitlines()
    assert lines[-1].startswith("*Cut here to stay under 1,000,000 bytes:")
    # Structure: the sections in order, each table row with its header's cell count.
    headings = [line for line in lines if line.startswith("#")]
    assert headings[:3] == [
        "# rentcheck report",
        "## Lifecycle",
        "## Disk budget per mount (local)",
    ]
    assert "## Verified pull (2 file(s))" in headings
    width = None
    for number, line in enumerate(lines):
        if not line.startswith("|"):
            width = None
        elif number + 1 < len(lines) and lines[number + 1].startswith("|---"):
            width = _cells(line)  # a table's header row
        elif not line.startswith("|---"):
            assert width is not None and _cells(line) == width, line
    assert "<script" not in text and "<img" not in text and "\x1b" not in text
    assert "javascript:" not in text
    assert not any("not a heading" in h for h in headings)  # the box's newline stayed inline


def test_markdown_of_an_empty_project_says_so(tmp_path: Path) -> None:
    text = render_markdown(gather(str(tmp_path)))
    assert "| pre-rent | lint | not run |" in text
    assert "No findings in the gates' last reports." in text


def test_report_writes_both_files_atomically_and_says_where(cli, project: Path) -> None:
    html, md = project / "out" / "r.html", project / "r.md"
    (project / "out").mkdir()
    result = cli("report", "--html", str(html), "--markdown", str(md), cwd=project)
    assert result.code == 0
    assert f"wrote the HTML report to {html}" in result.err
    assert md.read_text().startswith("# rentcheck report\n")
    shutil.rmtree(project / "out")

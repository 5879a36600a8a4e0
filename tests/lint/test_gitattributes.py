"""RC102: judged with git's own attribute resolution (`git check-attr`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_repo

SCRIPT = "#!/usr/bin/env bash\necho ok\n"


def _codes(cli, repo: Path) -> list[dict[str, object]]:
    result = cli("check", "--select", "RC102", "--output-format", "json", cwd=repo)
    return json.loads(result.out)["results"]


@pytest.mark.parametrize(
    ("attributes", "flagged"),
    [
        (None, True),
        ("*.py text\n", True),
        ("*.sh text eol=lf\n", False),
        ("* text=auto eol=lf\n", False),
        ("*.sh eol=lf\n", False),
        ("*.sh text eol=lf\ntools/*.sh -text\n", True),
        ("*.sh text eol=crlf\n", True),
    ],
)
def test_coverage_follows_git_semantics(
    cli, tmp_path: Path, attributes: str | None, flagged: bool
) -> None:
    files = {"run.sh": SCRIPT, "tools/sync.sh": SCRIPT}
    if attributes is not None:
        files[".gitattributes"] = attributes
    repo = make_repo(tmp_path / "repo", files, executable=("run.sh", "tools/sync.sh"))
    results = _codes(cli, repo)
    assert bool(results) is flagged
    if flagged:
        assert results[0]["path"] == ".gitattributes"


def test_fix_appends_lines_that_then_satisfy_git(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {".gitattributes": "*.png binary", "run.sh": SCRIPT, "bin/launch": SCRIPT},
        executable=("run.sh", "bin/launch"),
    )
    assert cli("check", "--select", "RC102", "--fix", cwd=repo).code == 0
    text = (repo / ".gitattributes").read_text()
    assert text.startswith("*.png binary\n")
    assert "*.sh text eol=lf" in text and "/bin/launch text eol=lf" in text
    assert _codes(cli, repo) == []


def test_outside_git_there_is_nothing_to_configure(cli, tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    (tmp_path / "run.sh").chmod(0o755)
    assert _codes(cli, tmp_path) == []

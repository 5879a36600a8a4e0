"""RC103 against the mode that matters: st_mode, or git's index when core.fileMode=false."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git, make_repo


def _findings(cli, repo: Path) -> list[dict[str, object]]:
    result = cli("check", "--select", "RC103", "--output-format", "json", cwd=repo)
    return json.loads(result.out)["results"]


def test_binaries_and_plain_data_are_left_alone(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {
            "tool": b"\x7fELF\x02\x01\x01\x00\x00\x00",
            "data.csv": "a,b\n",
            "notes.md": "# notes\n",
            "config.yml": "lr: 1\n",
        },
        executable=("tool", "notes.md", "config.yml"),
    )
    # Nothing flagged; and nothing here is a file RC103 reads, so the gate saw nothing (RC914).
    assert [f["code"] for f in _findings(cli, repo)] == ["RC914"]


def test_index_mode_is_used_when_filemode_is_false(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"run.sh": "#!/bin/sh\necho hi\n"})
    git(repo, "config", "core.fileMode", "false")
    git(repo, "update-index", "--chmod=+x", "run.sh")
    # On disk 0644 (as a Windows or FAT checkout would show), in the index 100755: fine.
    assert _findings(cli, repo) == []

    git(repo, "update-index", "--chmod=-x", "run.sh")
    (repo / "run.sh").chmod(0o755)  # the disk says executable, the commit will not
    [finding] = _findings(cli, repo)
    assert finding["details"]["state"] == "shebang-not-executable"
    assert "git add --chmod=+x run.sh" in finding["message"]


def test_filesystem_mode_is_used_when_filemode_is_trusted(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"setup.sh": "pip install .\n"}, executable=("setup.sh",))
    [finding] = _findings(cli, repo)
    assert finding["details"]["state"] == "executable-without-shebang"

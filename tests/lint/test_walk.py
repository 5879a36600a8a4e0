"""Which files a run looks at: git ls-files in a work tree, excludes for every path."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import make_repo, write_files

BAD = b"#!/bin/sh\r\necho x\r\n"


def _paths(cli, cwd: Path, *args: str) -> list[str]:
    result = cli("check", "--select", "RC101", "--output-format", "json", *args, cwd=cwd)
    assert result.code in (0, 1), result.err
    return sorted(r["path"] for r in json.loads(result.out)["results"])


def test_gitignored_files_are_skipped_but_untracked_ones_are_checked(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"tracked.sh": BAD, ".gitignore": "ignored.sh\nout/\n"})
    write_files(repo, {"ignored.sh": BAD, "untracked.sh": BAD, "out/gen.sh": BAD})
    assert _paths(cli, repo) == ["tracked.sh", "untracked.sh"]


def test_excludes_apply_to_explicit_paths_too(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"vendor/x.sh": BAD, "run.sh": BAD})
    (repo / "pyproject.toml").write_text('[tool.rentcheck]\nextend-exclude = ["vendor"]\n')
    assert _paths(cli, repo) == ["run.sh"]
    assert _paths(cli, repo, "vendor/x.sh") == []
    # Everything excluded: no file finding, and a gate that linted nothing (RC914, no path).
    assert _paths(cli, repo, "--extend-exclude", "run.sh") == [None]


def test_plain_directory_walk_prunes_default_excludes(cli, tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {"a.sh": BAD, ".venv/bin/activate.sh": BAD, "node_modules/x.sh": BAD, "sub/b.sh": BAD},
    )
    assert _paths(cli, tmp_path) == ["a.sh", "sub/b.sh"]


def test_symlinks_are_not_followed(cli, tmp_path: Path) -> None:
    write_files(tmp_path, {"real/a.sh": BAD})
    (tmp_path / "link.sh").symlink_to(tmp_path / "real" / "a.sh")
    assert _paths(cli, tmp_path) == ["real/a.sh"]


def test_missing_path_is_a_usage_error(cli, tmp_path: Path) -> None:
    result = cli("check", "nope.sh", cwd=tmp_path)
    assert result.code == 2
    assert result.err.count("\n") == 1 and "nope.sh does not exist" in result.err


def test_candidates_carry_the_size_their_lstat_saw(tmp_path: Path) -> None:
    """The engine hands out big files first by these sizes, without a second stat per file."""
    from rentcheck.lint.walk import collect

    plain = tmp_path / "plain"
    write_files(plain, {"a.sh": "#!/bin/sh\necho a\n", "b/c.sh": "x" * 700})
    repo = make_repo(tmp_path / "repo", {"run.sh": "#!/bin/sh\n" + "echo hi\n" * 50})
    explicit = tmp_path / "one.sh"
    explicit.write_bytes(b"#!/bin/sh\n")
    found = collect([str(plain), str(repo), str(explicit)], str(tmp_path), [])
    sizes = {Path(c.abspath).name: c.size for c in found}
    assert {n: sizes.get(n) for n in ("a.sh", "c.sh", "run.sh", "one.sh")} == {
        "a.sh": 17,
        "c.sh": 700,
        "run.sh": 410,
        "one.sh": 10,
    }
    assert all(c.size == Path(c.abspath).stat().st_size for c in found)

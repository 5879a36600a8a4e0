"""`rentcheck profiles`, `profiles show` and `profiles check` as a user runs them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rentcheck.profiles import shipped_profiles_dir
from tests.conftest import FIXTURES

USER = FIXTURES / "profiles" / "user"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with its own profiles directory holding the acme fixture."""
    (tmp_path / "ops").mkdir()
    shutil.copy(USER / "acme.md", tmp_path / "ops" / "acme.md")
    (tmp_path / "rentcheck.yaml").write_text('profiles:\n  paths: ["ops"]\n')
    return tmp_path


def test_list_is_a_table_of_every_profile(cli, tmp_path: Path) -> None:
    result = cli("profiles", cwd=tmp_path)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].split()[:3] == ["platform", "kind", "meter"]
    assert len(lines) == 2 + 15
    runpod = next(line for line in lines if line.startswith("runpod "))
    assert "terminate" in runpod and "network-volume" in runpod and "5 s" in runpod


def test_list_as_json_includes_user_profiles_first(cli, project: Path) -> None:
    result = cli("profiles", "list", "--output-format", "json", cwd=project)
    assert result.code == 0
    document = json.loads(result.out)
    assert document["schema"] == "rentcheck/profiles/v1"
    rows = {row["name"]: row for row in document["profiles"]}
    assert len(rows) == 16 and rows["acme"]["path"] == "ops/acme.md" and not rows["acme"]["shipped"]
    assert rows["acme"]["profile"]["meter_stop"]["destroys"] == ["root-disk"]
    assert rows["runpod"]["shipped"] and rows["runpod"]["valid"]


def test_an_invalid_user_profile_is_listed_and_fails_the_listing(cli, project: Path) -> None:
    text = (project / "ops" / "acme.md").read_text().replace("kind: ssh-rental", "kind: ssh")
    (project / "ops" / "acme.md").write_text(text)
    result = cli("profiles", cwd=project)
    assert (
        result.code == 1
        and "INVALID (1 problems: rentcheck profiles check ops/acme.md)" in result.out
    )


def test_show_prints_the_survival_matrix_and_the_warning(cli, tmp_path: Path) -> None:
    result = cli("profiles", "show", "runpod", cwd=tmp_path)
    assert result.code == 0
    assert "It cannot be undone." in result.out and "DELETES everything on" in result.out
    matrix = result.out[result.out.index("Survival matrix") :].splitlines()
    assert matrix[1].split()[:4] == ["tier", "paths", "after", "stop"]
    volume = next(line for line in matrix if line.startswith("volume-disk"))
    assert volume.split()[1:5] == ["[scratch]", "/workspace", "kept", "DELETED"]


def test_show_as_json(cli, project: Path) -> None:
    document = json.loads(
        cli("profiles", "show", "acme", "--output-format", "json", cwd=project).out
    )
    assert document["path"] == "ops/acme.md" and document["shipped"] is False
    assert document["profile"]["durable_tier"] == "bucket"
    rows = {row["tier"]: row for row in document["survival_matrix"]}
    assert rows["root-disk [scratch]"]["after terminate"] == "DELETED"
    assert "terminate (销毁)" in document["meter_stop_warning"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("profiles", "show", "runpd"), "did you mean 'runpod'"),
        (("profiles", "show"), "exactly one profile name"),
        (("profiles", "list", "extra"), "takes no arguments"),
        (("profiles", "check", "nowhere.md"), "no such file"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    cli, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.code == 2 and needle in result.err and result.err.count("\n") == 1


def test_check_given_files_and_directories(cli, project: Path) -> None:
    assert cli("profiles", "check", "ops", cwd=project).code == 0
    broken = project / "broken"
    broken.mkdir()
    text = (USER / "acme.md").read_text().replace("## GOTCHAS", "## TOP GOTCHAS")
    (broken / "acme.md").write_text(text)
    (broken / "README.md").write_text("# not a profile\n")
    result = cli("profiles", "check", "broken", "--output-format", "json", cwd=project)
    assert result.code == 1
    document = json.loads(result.out)
    assert document["summary"]["files_checked"] == 1
    assert document["summary"]["by_code"] == {"RC702": 2}
    assert document["profiles"] == [{"path": "broken/acme.md", "platform": "acme", "valid": True}]


def test_config_ignore_and_per_file_ignores_apply(cli, project: Path) -> None:
    text = (USER / "acme.md").read_text().replace("\n  (verified acme-pricing 2026-09).", ".")
    (project / "ops" / "acme.md").write_text(text)
    assert cli("profiles", "check", "ops/acme.md", cwd=project).code == 1
    config = 'profiles:\n  paths: ["ops"]\nper-file-ignores:\n  "ops/*.md": ["RC703"]\n'
    (project / "rentcheck.yaml").write_text(config)
    # The top-level selection is lint's: a profile code there is refused, naming where it goes.
    refused = cli("profiles", "check", "ops/acme.md", cwd=project)
    assert refused.code == 2
    assert "[tool.rentcheck.profiles] per-file-ignores" in refused.err
    config = 'profiles:\n  paths: ["ops"]\n  per-file-ignores:\n    "ops/*.md": ["RC703"]\n'
    (project / "rentcheck.yaml").write_text(config)
    assert cli("profiles", "check", "ops/acme.md", cwd=project).code == 0


def test_shipped_profiles_are_data_of_the_package() -> None:
    shipped = shipped_profiles_dir()
    assert shipped is not None and (Path(shipped) / "autodl.md").is_file()


def test_list_columns_stay_aligned_after_chinese_text(cli, tmp_path: Path) -> None:
    """autodl's "shutdown (关机)" is 15 characters but 17 terminal cells."""
    from rentcheck.textwidth import display_width

    lines = cli("profiles", cwd=tmp_path).out.splitlines()
    header = lines[0]
    column = display_width(header[: header.index("undo?")])
    rows = [line for line in lines[2:] if line.split()[0] in ("autodl", "featurize", "runpod")]
    assert len(rows) == 3 and any("关机" in row for row in rows)
    for row in rows:
        undo = re.search(r"  (yes|no|\?)  ", row)
        assert undo is not None
        assert display_width(row[: undo.start() + 2]) == column, row


def test_show_explains_a_mount_point_shared_by_two_tiers(cli, tmp_path: Path) -> None:
    out = cli("profiles", "show", "runpod", cwd=tmp_path).out
    assert "Shared mount points" in out
    assert "/workspace is the mount point of volume-disk and network-volume" in out
    assert "(volume-disk: DELETED, network-volume: kept)" in out
    # A profile without shared mount points has no such section.
    assert "Shared mount points" not in cli("profiles", "show", "autodl", cwd=tmp_path).out

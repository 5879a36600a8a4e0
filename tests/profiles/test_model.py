"""The API the audit and teardown gates use: load a profile by name (user directories first),
find the tier of a path, and say what the meter-stop action does to it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rentcheck.config import load_config
from rentcheck.errors import ConfigError, FormatError, UsageError
from rentcheck.profiles import available_profiles, load_profile, shipped_profiles_dir
from tests.conftest import FIXTURES

USER = FIXTURES / "profiles" / "user"


def _config(tmp_path: Path, paths: list[str]) -> object:
    (tmp_path / "rentcheck.yaml").write_text(f"profiles:\n  paths: {paths!r}\n")
    return load_config(str(tmp_path))


def test_shipped_profiles_are_found_without_config() -> None:
    assert shipped_profiles_dir() is not None
    assert len(available_profiles(None)) == 15
    runpod = load_profile("runpod")
    assert runpod.shipped and runpod.meter_stop.verb == "terminate"
    assert runpod.meter_stop.irreversible is True


@pytest.mark.parametrize(
    ("platform", "path", "destroyed"),
    [
        ("runpod", "/runpod-volume/ckpt/best.pt", False),
        ("runpod", "/workspace/ckpt", None),  # volume disk or Network Volume: only the mount knows
        ("runpod", "/tmp/x", True),  # the container disk
        ("autodl", "/root/autodl-tmp/run/state", False),  # 关机 keeps every tier
        ("lambda", "/home/ubuntu/ckpt", True),
        ("lambda", "/lambda/nfs/team-fs/ckpt", False),  # `<name>` matches one component
        ("lambda", "/lambda/nfs", True),  # the parent of the mount is the root disk
        ("bare-ssh", "/mnt/volume/x", True),  # `<mount point>` says nothing: the root disk
        ("local", "relative/path", None),
    ],
)
def test_what_the_meter_stop_does_to_a_path(
    platform: str, path: str, destroyed: bool | None
) -> None:
    assert load_profile(platform).destroyed_by_meter_stop(path) is destroyed


def test_home_is_expanded_when_given() -> None:
    slurm = load_profile("slurm")
    assert slurm.tiers_for_path("/home/me/run", home="/home/me")[0].name == "shared-parallel-fs"
    assert slurm.tiers_for_path("/home/me/run") == ()
    assert slurm.destroyed_by_meter_stop("~/run", home="/home/me") is False


def test_durable_and_destroyed_tiers_and_danger_clocks() -> None:
    autodl = load_profile("autodl")
    assert autodl.durable_tier is not None and autodl.durable_tier.paths == ("/root/autodl-fs",)
    assert autodl.scratch_tier is not None and autodl.scratch_tier.name == "data-disk"
    assert autodl.destroyed_tiers == ()
    assert autodl.danger_clocks[0].after_seconds == 15 * 86400
    assert load_profile("bare-ssh").durable_tier is None


def test_meter_stop_warning_names_the_action_and_what_it_destroys() -> None:
    warning = load_profile("runpod").meter_stop_warning()
    assert "terminate" in warning and "cannot be undone" in warning
    assert "DELETES everything on: container-disk (/); volume-disk (/workspace)" in warning
    assert "network-volume" in warning
    assert "No tier outlives it" in load_profile("bare-ssh").meter_stop_warning()
    assert "no meter to stop" in load_profile("local").meter_stop_warning()
    assert "by itself" in load_profile("colab").meter_stop_warning()


def test_user_directory_adds_and_overrides(tmp_path: Path) -> None:
    mine = tmp_path / "ops" / "profiles"
    mine.mkdir(parents=True)
    shutil.copy(USER / "acme.md", mine / "acme.md")
    shipped = Path(shipped_profiles_dir() or "") / "runpod.md"
    text = shipped.read_text().replace("durable_tier: network-volume", "durable_tier: null")
    (mine / "runpod.md").write_text(text)
    config = _config(tmp_path, ["ops/profiles"])
    entries = available_profiles(config)
    assert entries["acme"].path == str(mine / "acme.md") and not entries["acme"].shipped
    assert entries["runpod"].shadows == str(shipped)
    assert load_profile("runpod", config).durable_tier is None
    assert load_profile("runpod").durable_tier is not None


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UsageError, match="did you mean 'runpod'"):
        load_profile("runpd")


def test_invalid_profile_is_a_format_error_naming_the_fix(tmp_path: Path) -> None:
    mine = tmp_path / "p"
    mine.mkdir()
    (mine / "acme.md").write_text(
        (USER / "acme.md").read_text().replace("kind: ssh-rental", "kind: ssh")
    )
    with pytest.raises(FormatError, match="rentcheck profiles check"):
        load_profile("acme", _config(tmp_path, ["p"]))


def test_missing_user_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"profiles\.paths"):
        available_profiles(_config(tmp_path, ["nowhere"]))
    (tmp_path / "rentcheck.yaml").write_text("profiles:\n  pahts: [x]\n")
    with pytest.raises(ConfigError, match="did you mean 'paths'"):
        available_profiles(load_config(str(tmp_path)))

"""Settings precedence (defaults < file < env < CLI), discovery, validation, selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rentcheck.config import Config, find_config_file, load_config, selected_rules
from rentcheck.errors import ConfigError
from rentcheck.model import Applicability, Rule, RuleStatus, Severity
from rentcheck.registry import all_rules


def test_precedence_defaults_file_env_cli(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.rentcheck]\nselect = ["RC1"]\nfail-level = "error"\n'
    )
    assert load_config(str(tmp_path), env={}).select == ("RC1",)
    assert Config().select == ("ALL",)
    env = {"RENTCHECK_SELECT": "RC101,RC103", "RENTCHECK_FAIL_LEVEL": "note"}
    from_env = load_config(str(tmp_path), env=env)
    assert (from_env.select, from_env.fail_level) == (("RC101", "RC103"), Severity.NOTE)
    from_cli = load_config(str(tmp_path), env=env, overrides={"select": "RC102"})
    assert (from_cli.select, from_cli.fail_level) == (("RC102",), Severity.NOTE)


def test_extend_keys_add_across_layers(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("extend-exclude: [vendor]\n")
    config = load_config(
        str(tmp_path), env={"RENTCHECK_EXTEND_EXCLUDE": "gen"}, overrides={"extend-exclude": "x"}
    )
    assert config.extend_exclude == ("vendor", "gen", "x")


def test_yaml_is_found_upward_and_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rentcheck]\nselect = ['RC1']\n")
    (tmp_path / "rentcheck.yaml").write_text("select: [RC103]\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config_file(str(deep)) == str(tmp_path / "rentcheck.yaml")
    assert load_config(str(deep), env={}).root == str(tmp_path)


def test_pyproject_without_our_table_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert find_config_file(str(tmp_path)) is None


def test_unknown_key_names_key_file_and_suggestion(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rentcheck]\nselct = ['RC1']\n")
    with pytest.raises(ConfigError) as err:
        load_config(str(tmp_path), env={})
    text = str(err.value)
    assert "'selct'" in text and str(tmp_path / "pyproject.toml") in text and "'select'" in text


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text(
        "select: !!python/object/apply:os.system ['touch pwned']\n"
    )
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path), env={})
    assert not (tmp_path / "pwned").exists()


SHELL = {c for c, r in all_rules(with_plugins=False).items() if c.startswith("RC1")}
STABLE_SHELL = {c for c in SHELL if all_rules(with_plugins=False)[c].status.value == "stable"}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"select": ("RC1",)}, STABLE_SHELL),
        ({"select": ("RC1xx",)}, STABLE_SHELL),
        (
            {"select": ("RC10",), "ignore": ("RC102",)},
            {c for c in STABLE_SHELL if c < "RC110"} - {"RC102"},
        ),
        (
            {"select": ("RC101",), "extend_select": ("RC9",)},
            {"RC101", "RC900", "RC901", "RC910", "RC911", "RC912", "RC913", "RC914"},
        ),
        ({"select": ("RC1",), "ignore": ("RC1",)}, set()),
        ({"select": ("RC1",), "preview": True}, SHELL),
    ],
)
def test_prefix_selection(settings: dict[str, object], expected: set[str]) -> None:
    rules = all_rules(with_plugins=False)
    assert set(selected_rules(Config(**settings), rules)) == expected  # type: ignore[arg-type]
    assert {"RC101", "RC102", "RC103"} <= SHELL


def test_unknown_code_is_an_error_naming_key_and_file(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("ignore: [RC1O1]\n")
    config = load_config(str(tmp_path), env={})
    with pytest.raises(ConfigError) as err:
        selected_rules(config, all_rules(with_plugins=False))
    assert (
        "'RC1O1'" in str(err.value)
        and "'ignore'" in str(err.value)
        and "rentcheck.yaml" in str(err.value)
    )


def test_preview_rules_need_preview_or_their_exact_code() -> None:
    preview = Rule(
        "RC199",
        "p",
        "shell",
        "s",
        "w",
        "b",
        "g",
        "f",
        Applicability.NONE,
        Severity.NOTE,
        RuleStatus.PREVIEW,
    )
    rules = {**all_rules(with_plugins=False), preview.code: preview}
    assert "RC199" not in selected_rules(Config(select=("RC1",)), rules)
    assert "RC199" in selected_rules(Config(select=("RC1",), preview=True), rules)
    assert "RC199" in selected_rules(Config(select=("RC199",)), rules)


def test_bad_values_are_clear(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("fail-level: fatal\n")
    with pytest.raises(ConfigError, match="fail-level"):
        load_config(str(tmp_path), env={})
    with pytest.raises(ConfigError, match="RENTCHECK"):
        load_config(
            str(tmp_path / "nowhere"), env={"RENTCHECK_OUTPUT_FORMAT": "xml"}, isolated=True
        )


def test_config_command_prints_effective_settings(cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rentcheck]\nignore = ["RC103"]\n')
    text = cli("config", cwd=tmp_path)
    assert text.code == 0 and 'ignore = ["RC103"]' in text.out and "pyproject.toml" in text.out
    doc = json.loads(cli("config", "--output-format", "json", cwd=tmp_path).out)
    assert doc["settings"]["ignore"] == ["RC103"]
    assert "RC103" not in doc["enabled_rules"]
    assert doc["digest"].startswith("sha256:")


def test_digest_changes_with_settings_not_location(tmp_path: Path) -> None:
    assert Config(root="/a").digest() == Config(root="/b").digest()
    assert Config().digest() != Config(ignore=("RC101",)).digest()


def test_gate_sections_are_tables_validated_by_their_gate(tmp_path: Path) -> None:
    from rentcheck.config import check_section_keys

    (tmp_path / "pyproject.toml").write_text(
        "[tool.rentcheck.audit]\nbudget = '20G'\nworkerz = 4\n"
    )
    config = load_config(str(tmp_path), env={})
    assert config.section("audit")["budget"] == "20G"
    assert config.section("smoke") == {}
    with pytest.raises(ConfigError) as err:
        check_section_keys(config, "audit", ("budget", "workers"))
    assert "audit.workerz" in str(err.value) and "'workers'" in str(err.value)
    (tmp_path / "pyproject.toml").write_text("[tool.rentcheck]\naudit = 3\n")
    with pytest.raises(ConfigError, match="must be a table"):
        load_config(str(tmp_path), env={})

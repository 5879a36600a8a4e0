"""The rule table: complete metadata for every rule, and third-party packs via entry points."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from rentcheck.model import Applicability, Rule, RuleStatus, Severity
from rentcheck.registry import CODE_RE, all_rules
from tests.conftest import run_subprocess

TEXT_FIELDS = ("code", "name", "family", "summary", "why", "example_bad", "example_good", "fix")


def test_every_rule_has_all_metadata() -> None:
    rules = all_rules(with_plugins=False)
    assert rules
    names = set()
    for code, rule in rules.items():
        assert isinstance(rule, Rule) and rule.code == code and CODE_RE.match(code)
        for attr in TEXT_FIELDS:
            assert str(getattr(rule, attr)).strip(), f"{code} has an empty {attr}"
        assert len(rule.why) >= 80, f"{code}: the why should be a real paragraph"
        assert rule.name == rule.name.lower() and " " not in rule.name, f"{code}: kebab-case name"
        assert isinstance(rule.fix_applicability, Applicability)
        assert isinstance(rule.default_severity, Severity)
        assert isinstance(rule.status, RuleStatus)
        assert rule.name not in names
        names.add(rule.name)


PACK = textwrap.dedent(
    """
    from rentcheck import FileCheck, Finding, Rule, Applicability, Severity

    RULE = Rule(
        code="ZZ001", name="todo-in-script", family="demo", summary="TODO left in a script",
        why="A TODO in a launcher marks a step nobody finished; on a rented box it is a run "
            "that silently skips it.",
        example_bad="# TODO: sync", example_good="rsync ...", fix="Finish or delete the TODO.",
        fix_applicability=Applicability.NONE, default_severity=Severity.WARNING,
    )

    def _run(source):
        if b"TODO" in source.data:
            yield Finding(
                RULE.code, RULE.default_severity, "TODO left", path=source.path, line=1, col=1
            )

    CHECKS = [FileCheck(RULE, lambda s: s.path.endswith(".sh"), _run)]
    """
)


def _install_pack(site: Path) -> None:
    """A real distribution on sys.path (dist-info + entry point), as pip would leave it."""
    (site / "zz_pack.py").write_text(PACK)
    info = site / "zz_pack-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zz-pack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rentcheck.rules]\nzz = zz_pack:CHECKS\n")


def test_third_party_pack_is_listed_and_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_pack(site)
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.sh").write_text("# TODO: sync checkpoints\n")
    env = {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}
    listed = run_subprocess("rules", cwd=work, env=env)
    assert "ZZ001" in listed.stdout and "todo-in-script" in listed.stdout
    checked = run_subprocess("check", "--output-format", "concise", cwd=work, env=env)
    assert checked.returncode == 1 and "a.sh:1:1: ZZ001 TODO left" in checked.stdout
    ignored = run_subprocess("check", "--ignore", "ZZ", cwd=work, env=env)
    assert ignored.returncode == 0, ignored.stdout + ignored.stderr


def test_broken_pack_is_named_and_skipped(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_pack(site)
    (site / "zz_pack.py").write_text("raise ImportError('missing dependency foo')\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.sh").write_text("echo hi\n")
    env = {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}
    proc = run_subprocess("check", cwd=work, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "rule pack 'zz'" in line]
    assert len(warning) == 1 and "skipped" in warning[0] and "missing dependency foo" in warning[0]
    listed = run_subprocess("rules", cwd=work, env=env)
    assert listed.returncode == 0 and "RC101" in listed.stdout
    assert "skipped: rule pack 'zz'" in listed.stdout


def test_pack_taking_a_builtin_prefix_is_skipped(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_pack(site)
    pack = (site / "zz_pack.py").read_text().replace('code="ZZ001"', 'code="RC999"')
    (site / "zz_pack.py").write_text(pack)
    env = {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}
    listed = run_subprocess("rules", "--output-format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0
    assert "RC999" not in listed.stdout
    assert "rule pack 'zz' skipped: it uses code prefix RC (owned by rentcheck)" in listed.stderr


def test_rules_show_where_a_plugin_rule_comes_from(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_pack(site)
    env = {"PYTHONPATH": f"{site}:{':'.join(sys.path)}"}
    listed = run_subprocess("rules", cwd=tmp_path, env=env)
    line = next(x for x in listed.stdout.splitlines() if x.startswith("ZZ001"))
    assert line.endswith("[plugin zz (zz_pack)]")
    as_json = run_subprocess("rules", "--output-format", "json", cwd=tmp_path, env=env)
    import json

    origin = {r["code"]: r["origin"] for r in json.loads(as_json.stdout)}
    assert origin["ZZ001"] == "plugin zz (zz_pack)" and origin["RC101"] == "rentcheck"

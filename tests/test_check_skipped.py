"""A file a rule wants by its name but cannot read is reported as skipped, not as checked
(issue 30: a large binary `run.sh` counted as "1 file checked" and passed)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema

from tests.conftest import make_repo


def test_a_binary_script_is_skipped_not_checked(cli, tmp_path: Path) -> None:
    blob = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64
    repo = make_repo(
        tmp_path / "repo",
        {"run.sh": blob, "ok.sh": "#!/bin/bash\necho\n", ".gitattributes": "*.sh text eol=lf\n"},
    )
    res = cli("check", "--output-format", "concise", cwd=repo)
    assert res.code == 0, res.out
    assert "(1 file checked)" in res.out  # ok.sh only
    assert "Skipped 1 (no rule could read them): run.sh (binary)." in res.out
    doc = json.loads(cli("check", "--output-format", "json", "run.sh", cwd=repo).out)
    assert doc["summary"]["files_checked"] == 0
    assert doc["skipped"] == [{"path": "run.sh", "why": "binary"}]
    schema = resources.files("rentcheck").joinpath("resources/report.schema.json").read_text()
    jsonschema.validate(doc, json.loads(schema), cls=jsonschema.Draft202012Validator)


def test_named_files_that_the_config_excludes_are_said_to_be_excluded(cli, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"run.sh": b"#!/bin/bash\r\necho\r\n", "rentcheck.yaml": 'exclude: ["*.sh"]\n'},
    )
    res = cli("check", "run.sh", cwd=repo)
    assert res.code == 0
    assert "run.sh named but excluded by `exclude`/`extend-exclude`" in res.err
    assert "nothing matched" not in res.err
    (repo / "notes.txt").write_text("not a script\n")
    unmatched = cli("check", "notes.txt", cwd=repo)  # no rule looks at it: not "excluded"
    assert "nothing matched the paths" in unmatched.err

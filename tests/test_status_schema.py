"""``rentcheck status --output-format json`` against its shipped schema (issue 30: it had none)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema

from tests.conftest import make_repo


def _schema() -> dict[str, object]:
    text = resources.files("rentcheck").joinpath("resources/status.schema.json").read_text()
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema  # type: ignore[no-any-return]


def test_status_json_validates_fresh_failed_and_stale(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"run.sh": b"#!/bin/bash\r\necho\r\n"})
    docs = [json.loads(cli("status", "--output-format", "json", cwd=repo).out)]
    assert cli("check", cwd=repo).code == 1  # a failed lint in the ledger
    docs.append(json.loads(cli("status", "--output-format", "json", cwd=repo).out))
    (repo / "run.sh").write_bytes(b"#!/bin/bash\necho\n")  # now the lint verdict is stale
    docs.append(json.loads(cli("status", "--output-format", "json", cwd=repo).out))
    states = set()
    for doc in docs:
        jsonschema.validate(doc, _schema(), cls=jsonschema.Draft202012Validator)
        states |= {row["state"] for row in doc["gates"]}
    assert {"never run", "failed", "stale", "blocked"} <= states

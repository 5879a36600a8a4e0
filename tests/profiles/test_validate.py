"""Frontmatter validation: the Python validator agrees with the shipped JSON schema on every
shipped profile and on each broken fixture (tests/fixtures/profiles/frontmatter/*.yaml, whose
header comments say which keys must be reported and whether JSON Schema can see the problem)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rentcheck.profiles.document import read_markdown
from rentcheck.profiles.load import profile_files, shipped_profiles_dir
from rentcheck.profiles.validate import Problem, validate_frontmatter
from tests.conftest import FIXTURES, REPO_ROOT

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads(
    (REPO_ROOT / "src" / "rentcheck" / "resources" / "profile.schema.json").read_text()
)
BROKEN = sorted((FIXTURES / "profiles" / "frontmatter").glob("*.yaml"))
SHIPPED = profile_files(shipped_profiles_dir() or "")


def _schema_paths(data: Any) -> set[str]:
    """Where JSON Schema finds problems, written like Problem.where."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    paths = set()
    for error in validator.iter_errors(data):
        path = list(error.absolute_path)
        extra: list[str] = []
        if error.validator == "required":
            extra = [k for k in error.validator_value if k not in error.instance]
        elif error.validator == "additionalProperties":
            extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        for key in extra or [None]:
            full = [*path, key] if key is not None else path
            paths.add(Problem(tuple(full), "").where)
    return paths


def _expectations(path: Path) -> tuple[set[str], bool]:
    text = path.read_text()
    expect = re.search(r"^# expect: (.*)$", text, re.MULTILINE)
    schema = re.search(r"^# schema: (yes|no)$", text, re.MULTILINE)
    assert expect and schema, f"{path.name} needs '# expect:' and '# schema:' lines"
    return {p.strip() for p in expect.group(1).split(",")}, schema.group(1) == "yes"


def test_fifteen_shipped_profiles_and_the_readme_is_skipped() -> None:
    names = {Path(p).stem for p in SHIPPED}
    assert len(names) == 15 and "README" not in names
    assert {"autodl", "runpod", "vastai", "lambda", "bare-ssh", "local"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: Path(p).stem)
def test_shipped_profiles_pass_both_validators(path: str) -> None:
    doc = read_markdown(path)
    assert doc.frontmatter is not None
    data = yaml.safe_load(doc.frontmatter)
    assert validate_frontmatter(data, Path(path).stem) == []
    assert _schema_paths(data) == set()


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_fixture_is_caught_where_expected(path: Path) -> None:
    expected, schema_sees_it = _expectations(path)
    data = yaml.safe_load(path.read_text())
    problems = validate_frontmatter(data)
    mine = {p.where for p in problems}
    assert expected <= mine, [(p.where, p.message) for p in problems]
    structural = {p.where for p in problems if not p.cross_field}
    # Both validators see exactly the same structural problems ...
    assert structural == _schema_paths(data)
    # ... and the cross-field ones are exactly what JSON Schema cannot express.
    if schema_sees_it:
        assert expected <= structural
    else:
        assert _schema_paths(data) == set()
        assert all(p.cross_field for p in problems if p.where in expected)


def test_platform_must_equal_the_file_stem() -> None:
    data = yaml.safe_load((FIXTURES / "profiles" / "frontmatter" / "bad_kind.yaml").read_text())
    data["kind"] = "ssh-rental"
    assert validate_frontmatter(data, "acme") == []
    (problem,) = validate_frontmatter(data, "other")
    assert problem.where == "platform" and problem.cross_field and "other.md" in problem.message


@pytest.mark.parametrize("value", ["not a mapping", None, [1, 2], 7])
def test_frontmatter_that_is_not_a_mapping(value: object) -> None:
    (problem,) = validate_frontmatter(value)
    assert problem.where == "frontmatter" and "mapping" in problem.message
    assert _schema_paths(value) == {"frontmatter"}

"""The probe's answer is checked before any rule reads it: NaN, a bare ``{}``, wrong types and
facts missing for a requested path or budget never read as "All checks passed"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from liar import CannedBox

from rentcheck.box.runner import run_audit
from rentcheck.box.settings import audit_settings
from rentcheck.config import load_config
from rentcheck.errors import RemoteError
from rentcheck.registry import all_rules

SCHEMA = "rentcheck/box-facts/v1"


def _audit(tmp_path: Path, stdout: bytes) -> list[tuple[str, str]]:
    config = load_config(str(tmp_path), isolated=True)
    settings = audit_settings(
        config, paths=["data=/data"], budget="10G", overrides={"expect_gpu": False}
    )
    result = run_audit("liar", config, settings, all_rules(), box=CannedBox(stdout))
    return [(f.code, f.message) for f in result.findings]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected(tmp_path: Path, constant: str) -> None:
    answer = f'{{"schema": "{SCHEMA}", "memory": {{"limit_bytes": {constant}}}}}'
    with pytest.raises(RemoteError, match=f"holds {constant} is not a JSON number"):
        _audit(tmp_path, answer.encode())


def test_an_empty_answer_is_an_error_not_a_pass(tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match="not a rentcheck probe answer"):
        _audit(tmp_path, b"{}")
    with pytest.raises(RemoteError, match="not a rentcheck probe answer"):
        _audit(tmp_path, b"[1, 2]")


def test_a_requested_path_missing_from_the_answer_is_a_finding(tmp_path: Path) -> None:
    found = _audit(tmp_path, json.dumps({"schema": SCHEMA}).encode())
    assert (
        "RC316",
        "could not read paths.data (/data): the probe's answer has no fact for it",
    ) in (found)


def test_a_budget_without_free_space_is_a_finding(tmp_path: Path) -> None:
    place: dict[str, Any] = {"path": "/data", "exists": True, "space": None}
    answer = {"schema": SCHEMA, "paths": {"data": place}}
    found = _audit(tmp_path, json.dumps(answer).encode())
    assert any(
        code == "RC316" and "budget 9.3 GiB is unchecked" in message for code, message in found
    ), found


def test_a_fact_of_the_wrong_type_is_one_clear_error(tmp_path: Path) -> None:
    space = {"bytes_total": 10, "bytes_free": "lots"}
    answer = {"schema": SCHEMA, "paths": {"data": {"path": "/data", "space": space}}}
    with pytest.raises(RemoteError, match=r"facts\.paths\.data\.space\.bytes_free is str"):
        _audit(tmp_path, json.dumps(answer).encode())
    with pytest.raises(RemoteError, match=r"facts\.cpu\.nproc is bool, expected a number"):
        _audit(tmp_path, json.dumps({"schema": SCHEMA, "cpu": {"nproc": True}}).encode())


def test_the_real_probe_answers_pass_the_check(tmp_path: Path) -> None:
    from rentcheck.box.answer import parse_answer
    from rentcheck.box.facts import probe_script, probe_stream
    from rentcheck.box.transport import LocalBox

    request = {"paths": {"data": str(tmp_path)}, "caches": [str(tmp_path)]}
    for python in ("python3", "python3-absent"):  # the Python probe and the sh fallback
        result = LocalBox().run(probe_script(request, python=python), stdin=probe_stream())
        assert parse_answer(result.stdout, "local")["paths"]["data"]["exists"] is True

"""The manifest parser treats its input as hostile and says exactly what is wrong."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rentcheck.errors import FormatError
from rentcheck.pull.manifest import check_manifest, parse_manifest

SHA = "ab" * 32


def base() -> dict[str, Any]:
    return {
        "schema": "rentcheck/manifest/v1",
        "run_id": "run-1",
        "created_at": "2026-05-01T12:00:00+00:00",
        "host": "box",
        "files": [
            {"path": "a/best.pt", "size": 10, "mtime_ns": 1, "sha256": SHA},
            {"path": "b.json", "size": 0, "mtime_ns": -5, "sha256": SHA.upper(), "blake3": SHA},
        ],
        "leftovers": [{"path": "a/x.tmp", "size": 3, "reason": "name ends with .tmp"}],
        "totals": {"files": 2, "bytes": 10},
    }


def test_valid_manifest_is_typed() -> None:
    m = parse_manifest(json.dumps(base()).encode())
    assert [e.path for e in m.files] == ["a/best.pt", "b.json"]
    assert m.files[1].sha256 == SHA  # normalised to lower case
    assert m.files[1].blake3 == SHA
    assert m.leftovers[0].path == "a/x.tmp"
    assert m.created_at.tzinfo is not None
    assert len(m.sha256) == 64


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["files"][0][path] = value

    return change


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("dotdot", _set("path", "../etc/passwd"), "'..' component"),
    ("inner-dotdot", _set("path", "a/../../b"), "'..' component"),
    ("dot", _set("path", "./a"), "'.' component"),
    ("absolute", _set("path", "/etc/passwd"), "absolute"),
    ("drive", _set("path", "C:/x"), "absolute"),
    ("backslash", _set("path", "a\\b"), "backslash"),
    ("nul", _set("path", "a\x00b"), "control character"),
    ("newline", _set("path", "a\nb"), "control character"),
    ("empty-part", _set("path", "a//b"), "empty component"),
    ("trailing-slash", _set("path", "a/"), "empty component"),
    ("surrogate", _set("path", "a\udcffb"), "UTF-8"),
    ("long-part", _set("path", "x" * 256), "255 bytes"),
    ("reserved", _set("path", "PULL_MANIFEST.json"), "reserved"),
    ("negative-size", _set("size", -1), "non-negative integer"),
    ("bool-size", _set("size", True), "non-negative integer"),
    ("float-size", _set("size", 1.0), "non-negative integer"),
    ("short-digest", _set("sha256", "ab" * 31), "64 hexadecimal"),
    ("non-hex-digest", _set("sha256", "zz" * 32), "64 hexadecimal"),
    ("bad-blake3", _set("blake3", "00"), "64 hexadecimal"),
    ("unknown-key", _set("owner", "root"), "unexpected object"),
    ("schema", lambda d: d.update(schema="remote-gpu-trainer/PULL/v1"), "schema is"),
    ("no-files", lambda d: d.pop("files"), r"lacks \['files'\]"),
    ("run-id", lambda d: d.update(run_id=""), "run_id"),
    ("created", lambda d: d.update(created_at="yesterday"), "ISO-8601"),
    ("totals", lambda d: d.update(totals={"files": 3, "bytes": 10}), "totals"),
    ("duplicate", lambda d: d["files"].append(dict(d["files"][0])), "listed twice"),
    (
        "nfc-duplicate",
        lambda d: d["files"].extend(
            [
                {"path": "caf\u00e9", "size": 0, "mtime_ns": 0, "sha256": SHA},
                {"path": "cafe\u0301", "size": 0, "mtime_ns": 0, "sha256": SHA},
            ]
        ),
        "listed twice",
    ),
    (
        "file-and-dir",
        lambda d: d["files"].append({"path": "a", "size": 0, "mtime_ns": 0, "sha256": SHA}),
        "both a file and a directory",
    ),
    ("leftover-escape", lambda d: d["leftovers"][0].update(path="../x.tmp"), "'..' component"),
    ("files-not-list", lambda d: d.update(files={"a": 1}), "unexpected object"),
    ("files-of-strings", lambda d: d.update(files=["a", "b"]), "arrays may only hold objects"),
    ("top-shape-nested", lambda d: d["files"].append({"host": "x"}), "more than one top-level"),
]


@pytest.mark.parametrize(("name", "change", "message"), CASES, ids=[c[0] for c in CASES])
def test_rejections(name: str, change: Callable[[dict[str, Any]], None], message: str) -> None:
    doc = copy.deepcopy(base())
    change(doc)
    with pytest.raises(FormatError, match=message):
        parse_manifest(json.dumps(doc).encode())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "arrays may only hold objects|must be a JSON object"),
        (b'{"schema": 1, "schema": 2}', "duplicate key"),
        (b"[" * 100_000, "arrays may only hold objects|nested deeper|must be a JSON object"),
        (b'{"files": [[], [], []]}', "arrays may only hold objects"),
        (b'{"files": [0, 0, 0]}', "arrays may only hold objects"),
        (b'{"a": {"b": {"c": {}}}}', "nested deeper|unexpected object"),
        (b'{"files": [{}, {}]}', "empty object"),
        (b'{"files": [{"host": 1}, {"host": 2}]}', "more than one top-level"),
    ],
)
def test_hostile_json_shapes(raw: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        parse_manifest(raw)


def test_check_manifest_reports_rc501(tmp_path: Path) -> None:
    doc = base()
    doc["files"][0]["path"] = "../../x"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    manifest, findings = check_manifest(tmp_path / "m.json")
    assert manifest is None
    assert [(f.code, f.path) for f in findings] == [("RC501", str(tmp_path / "m.json"))]
    assert check_manifest(tmp_path / "missing.json")[1][0].code == "RC501"
    (tmp_path / "ok.json").write_text(json.dumps(base()))
    assert check_manifest(tmp_path / "ok.json")[1] == []


@pytest.mark.parametrize(
    "entry",
    [
        {"path": "a/b.pt", "size": 10, "mtime_ns": 1, "sha256": SHA},
        {"path": "a/b.pt", "size": 0, "mtime_ns": -(2**63), "sha256": SHA.upper(), "blake3": SHA},
        {"path": "a/b.pt", "size": 2**63 - 1, "mtime_ns": 2**63 - 1, "sha256": SHA},
        {"path": "a/b.pt", "size": 2**63, "mtime_ns": 1, "sha256": SHA},
        {"path": "a/b.pt", "size": 1, "mtime_ns": -(2**63) - 1, "sha256": SHA},
        {"path": "a/b.pt", "size": 9999999999999999999, "mtime_ns": 1, "sha256": SHA},
        {"path": "a/../b.pt", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "./b.pt", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "a//b.pt", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "/b.pt", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "a/", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "PULL_MANIFEST.json", "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "x" * 256, "size": 1, "mtime_ns": 1, "sha256": SHA},
        {"path": "a/b.pt", "size": 1, "mtime_ns": 1, "sha256": SHA[:-1] + "g"},
        {"path": "caf\u00e9.pt", "size": 1, "mtime_ns": 1, "sha256": SHA},
    ],
)
def test_the_builder_layout_fast_path_agrees_with_the_general_parser(entry: dict[str, Any]) -> None:
    # The builder writes sorted keys, indented: one regex match per entry. The same entry in
    # another key order goes through json and the validating hook: the same rows or the same
    # error, whatever the entry holds.
    def parse(text: str) -> object:
        try:
            return tuple(parse_manifest(text.encode()).files)
        except FormatError as exc:
            return exc.message

    doc = base() | {"files": [entry], "leftovers": []}
    doc.pop("totals")
    builder_layout = json.dumps(doc, indent=2, sort_keys=True)
    assert '"mtime_ns": ' in builder_layout
    reordered = dict(reversed(list(entry.items())))
    other = json.dumps(doc | {"files": [reordered]}, indent=2, sort_keys=False)
    assert parse(builder_layout) == parse(other)

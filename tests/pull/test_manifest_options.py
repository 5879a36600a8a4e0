"""One meaning per option name: in ``manifest build`` the manifest is ``--manifest`` and
``-o/--output-file`` the report, as in every command; ``--output`` is not a second name."""

from __future__ import annotations

import json
from pathlib import Path


def test_the_manifest_is_written_where_manifest_says(cli, tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    (root / "a.txt").write_text("hi\n")
    out = tmp_path / "roster.json"
    res = cli("manifest", "build", str(root), "--manifest", str(out), cwd=tmp_path)
    assert res.code == 0, res.out + res.err
    assert json.loads(out.read_text())["files"][0]["path"] == "a.txt"
    refused = cli("manifest", "build", str(root), "--output", str(out), cwd=tmp_path)
    assert refused.code == 2  # not the manifest file any more: argparse names the choices

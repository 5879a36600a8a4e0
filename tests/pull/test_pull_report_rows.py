"""The rows a text verify keeps for the report, and the tally, made from the verdict columns."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rentcheck.model import Severity
from rentcheck.pull.gate import file_verdicts
from rentcheck.pull.manifest import build_manifest_file, load_manifest
from rentcheck.pull.verdicts import rows_of, tally
from rentcheck.pull.verify import verify_tree


def _tree(root: Path) -> None:
    for i in range(1500):
        folder = root / f"d{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04d}.png").write_bytes(i.to_bytes(2, "little") * 50)
    (root / "zz").mkdir()
    (root / "zz" / "late.png").write_bytes(b"a" * 100)
    (root / "zz" / "gone.png").write_bytes(b"b" * 100)
    (root / "zz" / "m.json").write_text('{"loss": 1}')


@pytest.mark.parametrize("with_manifest", [True, False])
def test_a_limited_listing_keeps_every_file_with_findings(
    tmp_path: Path, with_manifest: bool
) -> None:
    root = tmp_path / "run"
    _tree(root)
    manifest = None
    if with_manifest:
        build_manifest_file(root, run_id="r")
        manifest = load_manifest(root / "PULL_MANIFEST.json")
        (root / "zz" / "late.png").write_bytes(b"c" * 100)  # digest: after every ok file
        (root / "zz" / "gone.png").unlink()
    (root / "zz" / "m.json").write_text('{"loss": ')  # unparsable, named in either case
    result = verify_tree(root, manifest, jobs=1)
    every = file_verdicts(result, Severity.ERROR)
    some = file_verdicts(result, Severity.ERROR, ok_limit=10)
    assert len(every) == 1503  # gone.png still listed: missing
    assert [r for r in some if r["verdict"] == "ok"] == [r for r in every if r["verdict"] == "ok"][
        :10
    ]
    not_ok = [r for r in every if r["verdict"] != "ok"]
    assert [r for r in some if r["verdict"] != "ok"] == not_ok
    names = {r["path"]: r["verdict"] for r in not_ok}
    if with_manifest:
        assert names == {"zz/gone.png": "missing", "zz/late.png": "failed", "zz/m.json": "failed"}
    else:
        assert names == {"zz/m.json": "failed"}
    rows = list(rows_of(result.files))
    assert tally(result.files) == (
        sum(r[1] for r in rows),
        Counter(r[4] for r in rows),
        sum(r[5] for r in rows),
    )

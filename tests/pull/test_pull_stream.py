"""The streaming verifier: the walk's order is the roster's, any roster order still matches,
large files go through a bounded queue, and the verdicts read back as the files were."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rentcheck.payload import manifest_builder as builder
from rentcheck.pull import bigfiles
from rentcheck.pull.manifest import load_manifest
from rentcheck.pull.marker import write_verified_marker
from rentcheck.pull.verdicts import Verdicts
from rentcheck.pull.verify import verify_pull, verify_tree
from rentcheck.pull.walk import LocalFile, iter_tree

NAMES = ["a-b", "a.b/c", "a/x", "a/x-y", "a/x.y/z", "a0", "b/a/x", "b/a-x", "b/ab", "ab/z"]


def make_tree(root: Path, big: int = 0) -> Path:
    """Names whose depth-first order differs from a naive per-directory sort, and ``big``
    files larger than one inline read (they go to the worker threads)."""
    for k, rel in enumerate(NAMES):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * k)
    for k in range(big):
        (root / "big").mkdir(exist_ok=True)
        (root / "big" / f"shard-{k:02d}.bin").write_bytes(os.urandom(300_000 + 4096 * k))
    return root


def test_the_walk_yields_paths_in_the_rosters_sorted_order(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    (root / "link").symlink_to("/etc")
    walked = [item.rel if isinstance(item, LocalFile) else item[0] for item in iter_tree(root)]
    assert walked == sorted([*NAMES, "link"])  # a naive sort would put "a/x" before "a-b"
    builder.write_manifest(str(root / "a"), str(tmp_path / "m.json"), run_id="r")
    listed = [e["path"] for e in json.loads((tmp_path / "m.json").read_bytes())["files"]]
    assert listed == sorted(listed) == ["x", "x-y", "x.y/z"]


def test_a_roster_in_any_order_is_matched(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t")
    builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), run_id="r")
    doc = json.loads((root / builder.MANIFEST_NAME).read_bytes())
    doc["files"].reverse()  # valid, but not what the builder writes: looked up, not joined
    (root / builder.MANIFEST_NAME).write_bytes(builder.dumps(doc))
    assert not load_manifest(root / builder.MANIFEST_NAME).files.is_sorted
    (root / "a-b").unlink()
    (root / "extra").write_bytes(b"?")
    result = verify_pull(root)
    assert {(f.code, f.path) for f in result.findings} == {("RC506", "a-b"), ("RC507", "extra")}
    assert [v.path for v in result.files] == sorted(set(NAMES) - {"a-b"})  # path order


@pytest.mark.parametrize("jobs", [1, 2])
def test_large_files_through_a_full_queue_are_all_checked(
    tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bigfiles, "WINDOW", 2)  # the walk waits for the workers every file
    root = make_tree(tmp_path / "t", big=7)
    builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), run_id="r")
    (root / "big" / "shard-03.bin").write_bytes(os.urandom(300_000 + 4096 * 3))  # changed
    result = verify_pull(root, jobs=jobs, chunk_size=64 * 1024)
    assert [(f.code, f.path) for f in result.findings] == [("RC509", "big/shard-03.bin")]
    assert len(result.files) == len(NAMES) + 7
    assert result.bytes_read == sum(v.size for v in result.files) > 7 * 300_000
    bad = {v.path: v for v in result.files if v.errors}
    assert list(bad) == ["big/shard-03.bin"] and bad["big/shard-03.bin"].sha256 is not None


def test_verdicts_read_back_as_the_files_are(tmp_path: Path) -> None:
    """Files that match their entry are kept in a few bytes each, the others whole; both
    read back in path order with their real size, mtime and digest."""
    root = make_tree(tmp_path / "t", big=2)
    builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), run_id="r")
    (root / "b" / "ab").write_bytes(b"longer now")  # a verdict unlike its entry
    (root / "zz").write_bytes(b"not listed")  # unexpected: reported, not read
    result = verify_tree(root, load_manifest(root / builder.MANIFEST_NAME), jobs=2)
    assert isinstance(result.files, Verdicts)
    assert result.codes() == {"RC507", "RC508"}
    assert [v.path for v in result.files] == sorted(
        [*NAMES, "big/shard-00.bin", "big/shard-01.bin"]
    )
    for v in result.files:
        st = os.stat(root / v.path)
        assert (v.size, v.mtime_ns) == (st.st_size, st.st_mtime_ns), v
        assert v.sha256 == builder.hash_file(v.path, str(root / v.path), False)["sha256"]
    assert (
        result.files[-1] == list(result.files)[-1] and result.files[1:3] == tuple(result.files)[1:3]
    )
    assert result.files.total_bytes() == sum(v.size for v in result.files)
    assert result.every_listed_file_read()
    no_manifest = verify_tree(root, None)
    assert [v.path for v in no_manifest.files] == sorted([v.path for v in result.files] + ["zz"])


def test_the_marker_lists_every_verified_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", big=1)
    builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), run_id="r")
    marker = json.loads(write_verified_marker(verify_pull(root)).read_bytes())
    want = sorted([*NAMES, "big/shard-00.bin"])
    assert [e["path"] for e in marker["files"]] == want
    assert marker["totals"] == {
        "files": len(want),
        "bytes": sum((root / p).stat().st_size for p in want),
    }

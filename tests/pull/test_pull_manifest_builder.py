"""The remote builder: stdlib only, run as ``python3 -I -S``, refusals exit 2 with one line."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pullkit import BUILDER, run_builder

from rentcheck.errors import UsageError
from rentcheck.pull.manifest import build_manifest_file, load_manifest, parse_manifest


def make_box(root: Path) -> Path:
    (root / "cell_a").mkdir(parents=True)
    (root / "cell_a" / "best.pt").write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    (root / "cell_a" / "metrics.json").write_text('{"loss": 0.5}')
    (root / "cell_b" / "deep" / "er").mkdir(parents=True)
    (root / "cell_b" / "deep" / "er" / "log.txt").write_text("line\n")
    (root / "cell_b" / "empty.bin").write_bytes(b"")
    (root / "cell_b" / "ckpt.safetensors.tmp").write_bytes(b"half a file")
    (root / "PULL_VERIFIED.json").write_text("{}")  # reserved names are never listed
    return root


def refusal(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rentcheck: error: ")
    assert "(fix: " in lines[0]
    return lines[0]


def test_isolated_run_writes_a_valid_exact_manifest(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    proc = run_builder(root, "--run-id", "sweep-7", "--jobs", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("rentcheck: wrote ")
    assert "leftover 'cell_b/ckpt.safetensors.tmp'" in proc.stderr
    raw = (root / "PULL_MANIFEST.json").read_bytes()
    manifest = parse_manifest(raw)
    assert manifest.run_id == "sweep-7"
    paths = [e.path for e in manifest.files]
    assert (
        paths
        == sorted(paths)
        == [
            "cell_a/best.pt",
            "cell_a/metrics.json",
            "cell_b/deep/er/log.txt",
            "cell_b/empty.bin",
        ]
    )
    for entry in manifest.files:
        data = (root / entry.path).read_bytes()
        assert entry.size == len(data)
        assert entry.sha256 == hashlib.sha256(data).hexdigest()
        assert entry.mtime_ns == (root / entry.path).stat().st_mtime_ns
    assert [(x.path, x.size) for x in manifest.leftovers] == [("cell_b/ckpt.safetensors.tmp", 11)]
    doc = json.loads(raw)
    assert doc["totals"] == {"files": 4, "bytes": sum(e.size for e in manifest.files)}
    assert "blake3" not in doc["files"][0]  # -S: no site-packages, so no blake3
    assert not [p for p in root.iterdir() if ".tmp-" in p.name]  # the temp file is gone


def test_rebuild_replaces_and_excludes_its_own_output(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    run_builder(root, check=True)
    first = load_manifest(root / "PULL_MANIFEST.json")
    run_builder(root, check=True)
    second = load_manifest(root / "PULL_MANIFEST.json")
    assert [e.path for e in first.files] == [e.path for e in second.files]
    assert first.run_id != second.run_id  # generated ids differ


def test_runs_from_stdin_like_over_ssh(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    out = tmp_path / "m.json"
    with open(BUILDER, "rb") as src:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-", str(root), "-o", str(out)],
            stdin=src,
            capture_output=True,
            text=True,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    assert len(load_manifest(out).files) == 4


def test_builder_imports_only_the_standard_library() -> None:
    tree = ast.parse(BUILDER.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    assert names <= set(sys.stdlib_module_names) | {"__future__"}
    assert "importlib" in names  # blake3 is only ever reached through importlib, optionally


def test_symlink_leaving_root_is_refused(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    (root / "cell_a" / "passwd").symlink_to("/etc/passwd")
    line = refusal(run_builder(root))
    assert "points outside ROOT" in line
    assert not (root / "PULL_MANIFEST.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "dir-link", "dangling", "bad-name", "backslash"])
def test_other_refusals(tmp_path: Path, kind: str) -> None:
    root = make_box(tmp_path / "box")
    if kind == "fifo":
        os.mkfifo(root / "cell_a" / "pipe")
    elif kind == "dir-link":
        (root / "link").symlink_to(root / "cell_b")
    elif kind == "dangling":
        (root / "link").symlink_to(root / "missing")
    elif kind == "bad-name":
        with open(os.path.join(os.fsencode(root), b"\xff\xfe.bin"), "wb") as f:
            f.write(b"x")
    else:
        (root / "a\\b.txt").write_text("x")
    refusal(run_builder(root))


def test_symlink_to_a_file_inside_root_is_hashed(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    (root / "best_link.pt").symlink_to("cell_a/best.pt")
    run_builder(root, check=True)
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    entries = {e.path: e for e in manifest.files}
    assert entries["best_link.pt"].sha256 == entries["cell_a/best.pt"].sha256


def test_output_inside_root_must_be_the_default_name(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    assert "inside ROOT" in refusal(run_builder(root, "-o", root / "cell_a" / "m.json"))
    assert "run id" in refusal(run_builder(root, "--run-id", "has space"))
    assert "not a directory" in refusal(run_builder(root / "nope"))


def test_in_process_wrapper_raises_usage_error(tmp_path: Path) -> None:
    root = make_box(tmp_path / "box")
    out, manifest = build_manifest_file(root, run_id="r1", jobs=2)
    assert out == root / "PULL_MANIFEST.json"
    assert manifest["run_id"] == "r1"
    (root / "x").symlink_to("/etc/passwd")
    with pytest.raises(UsageError) as exc:
        build_manifest_file(root)
    assert "outside ROOT" in exc.value.message
    assert exc.value.hint

"""The pull gate at scale: streamed manifests, compact rosters, bounded memory (no timings)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rentcheck.errors import FormatError
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.manifest import ManifestEntry, Roster, parse_manifest
from rentcheck.pull.marker import _dumps as marker_dumps
from rentcheck.pull.verify import FileVerdict, verify_pull

SRC = Path(__file__).resolve().parents[2] / "src"
SHA = "ab" * 32


def tricky_tree(root: Path) -> Path:
    """Names whose depth-first order differs from a naive per-directory sort, a large file
    (hashed by the pool), an empty file, non-ASCII names and a leftover."""
    for rel, data in {
        "a": b"1",
        "a-b": b"2",
        "a.b/c": b"3",
        "b/a/x": b"4",
        "b/a-x": b"5",
        "b/ab": b"",
        "ab/z": b"6",
        "caf\u00e9/\u00fcber.json": b'{"x": 1}',
        "z/ckpt.pt.tmp": b"half",
        "z/big.bin": os.urandom(3 * builder.SMALL + 5),
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_streamed_manifest_is_exactly_what_dumps_writes(tmp_path: Path) -> None:
    root = tricky_tree(tmp_path / "box")
    out = tmp_path / "m.json"
    summary = builder.write_manifest(str(root), str(out), run_id="r1", jobs=2)
    raw = out.read_bytes()
    doc = json.loads(raw)
    assert builder.dumps(doc) == raw  # byte for byte what the old whole-dict writer made
    paths = [e["path"] for e in doc["files"]]
    assert paths == sorted(paths) and len(paths) == 9
    assert (
        [x["path"] for x in doc["leftovers"]]
        == ["z/ckpt.pt.tmp"]
        == [x["path"] for x in summary["leftovers"]]
    )
    assert doc["totals"] == summary["totals"] == {"files": 9, "bytes": 3 * builder.SMALL + 19}
    held = builder.build_manifest(str(root), run_id="r1", jobs=1)
    assert held["files"] == doc["files"]  # streamed (2 threads) and held (1 thread) agree
    assert parse_manifest(raw).files == tuple(
        ManifestEntry(e["path"], e["size"], e["mtime_ns"], e["sha256"]) for e in doc["files"]
    )


def test_empty_tree_and_blake3_entries_keep_the_format(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    out = tmp_path / "m.json"
    builder.write_manifest(str(tmp_path / "empty"), str(out), run_id="r1")
    raw = out.read_bytes()
    assert builder.dumps(json.loads(raw)) == raw and b'"files": [],' in raw
    entry = {"path": 'q"uote/\u00e9', "size": 1, "mtime_ns": -3, "sha256": SHA, "blake3": SHA}
    want = builder._json({"files": [entry]}).split("\n", 2)[2].rsplit("\n", 2)[0]
    assert builder._entry_text(entry) == want


def test_a_refusal_leaves_no_output_and_no_open_file(tmp_path: Path) -> None:
    root = tmp_path / "box"
    root.mkdir()
    for k in range(6):  # large files queued on the pool when the refusal comes
        (root / f"a{k}.bin").write_bytes(os.urandom(2 * builder.SMALL))
    (root / "zz").symlink_to("/etc/passwd")
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(builder.BuildError, match="outside ROOT"):
        builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), jobs=1)
    assert len(os.listdir("/proc/self/fd")) == before
    assert sorted(p.name for p in root.iterdir()) == [f"a{k}.bin" for k in range(6)] + ["zz"]


def test_marker_writes_one_line_per_file_and_reads_back() -> None:
    verdicts = [FileVerdict(f'd/\u00e9"{i}', i, -i, SHA, "data", 0, 0) for i in range(1030)]
    verdicts.append(FileVerdict("unread", 5, 0, None, "unread", 0, 1))
    want = [{"path": v.path, "size": v.size, "mtime_ns": v.mtime_ns, "sha256": v.sha256}
            for v in verdicts]  # fmt: skip
    for payload, files in (
        ({"schema": "s", "totals": {"files": 4}}, verdicts),  # three pieces of rows
        ({"schema": "s"}, verdicts[:1]),
        ({}, []),
    ):
        rows = [(v.path, v.size, v.mtime_ns, v.sha256, v.kind, v.tensors, v.errors) for v in files]
        raw = b"".join(marker_dumps({**payload, "files": []}, rows))
        assert json.loads(raw) == {**payload, "files": want[: len(files)]}
        lines = raw.decode().splitlines()
        assert sum(line.startswith('    {"mtime_ns": ') for line in lines) == len(files)


def _manifest(paths: list[str]) -> bytes:
    files = [{"path": p, "size": 1, "mtime_ns": 0, "sha256": SHA} for p in paths]
    return json.dumps(
        {
            "schema": builder.SCHEMA,
            "run_id": "r",
            "created_at": "2026-12-01T00:00:00+00:00",
            "host": "h",
            "files": files,
            "totals": {"files": len(files), "bytes": len(files)},
        }
    ).encode()


@pytest.mark.parametrize("order", ["sorted", "unsorted", "non-nfc"])
def test_roster_lookups_and_checks_in_any_order(order: str) -> None:
    paths = ["a/b", "a/c", "b", "c/d/e"]
    if order == "unsorted":
        paths.reverse()
    if order == "non-nfc":
        paths.append("cafe\u0301")
    files = parse_manifest(_manifest(paths)).files
    assert isinstance(files, Roster) and len(files) == len(paths)
    assert [e.path for e in files] == paths and files[-1].path == paths[-1]
    assert files[1:3] == tuple(files)[1:3]
    for i, path in enumerate(paths):
        key = "caf\u00e9" if path == "cafe\u0301" else path
        assert files.find(key) == i and files[i] in files
    assert files.find("a") is None and files.find("c/d") is None
    for bad, message in (("a", "both a file"), ("c/d", "both a file"), ("b", "listed twice")):
        with pytest.raises(FormatError, match=message):
            parse_manifest(_manifest([*paths, bad]))


def test_roster_entries_must_fit_in_64_bits() -> None:
    raw = _manifest(["a"]).replace(b'"size": 1', b'"size": 9223372036854775808')
    with pytest.raises(FormatError, match="64 bits"):
        parse_manifest(raw.replace(b'"bytes": 1', b'"bytes": 9223372036854775808'))


ROW = (
    '    {\n      "blake3": "%s",\n      "mtime_ns": %d,\n      "path": "run/step_%05d/'
    'sample_%07d.png",\n      "sha256": "%s",\n      "size": %d\n    }'
)
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def write_roster(path: Path, n: int, *, sha: Callable[[int], str], size: int) -> None:
    """A manifest of ``n`` entries ``run/step_<i // 1000>/sample_<i>.png``, in the builder's
    layout (sorted, indented, both digests), written a few thousand rows at a time."""
    head = builder._json({"created_at": "2026-12-01T00:00:00+00:00"})[: -len("\n}")]
    with open(path, "w") as f:
        f.write(head + ',\n  "files": [\n')
        for start in range(0, n, 10_000):
            end = min(n, start + 10_000)
            rows = (
                ROW % (SHA, 1764547200 * 10**9 + i, i // 1000, i, sha(i), size)
                for i in range(start, end)
            )
            f.write(",\n".join(rows) + (",\n" if end < n else "\n  ],"))
        tail = {"host": "box", "leftovers": [], "run_id": "big", "schema": builder.SCHEMA,
                "totals": {"files": n, "bytes": size * n}}  # fmt: skip
        f.write(builder._json(tail)[1:] + "\n")


def peak_rss_mib(code: str) -> float:
    """Run ``code`` in a fresh interpreter; its own peak RSS (VmHWM: ru_maxrss would carry
    this process's across exec)."""
    script = f"import sys\nsys.path.insert(0, {str(SRC)!r})\n" + textwrap.dedent(code)
    script += textwrap.dedent("""
        status = open("/proc/self/status").read()
        print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return int(proc.stdout.split()[-1]) / 1024


def test_a_million_entry_roster_parses_and_checks_in_bounded_memory(tmp_path: Path) -> None:
    """1,000,000 entries with both digests (about 290 MB of JSON, the builder's layout) are
    parsed, validated (duplicates, file-and-directory) and every path looked up, in a
    subprocess whose peak RSS stays under 300 MB: the file is never held whole and the
    roster is held in columns."""
    n = 1_000_000
    path = tmp_path / "PULL_MANIFEST.json"
    write_roster(path, n, sha=lambda i: f"{i:064x}", size=4096)
    assert path.stat().st_size > 250_000_000  # more than the old 64 MiB cap, 4x over
    peak_mib = peak_rss_mib(f"""
        from rentcheck.pull.manifest import check_manifest, normalize_path
        manifest, findings = check_manifest({str(path)!r})
        assert findings == [], findings
        files = manifest.files
        assert len(files) == {n} and manifest.total_bytes == {4096 * n}
        assert all(files.find(normalize_path(p)) == i for i, p in enumerate(files.paths))
        assert files[-1].path == "run/step_00999/sample_0999999.png", files[-1]
        assert files[-1].sha256 == "%064x" % ({n} - 1) and files[-1].blake3 == {SHA!r}
    """)
    print(f"peak RSS {peak_mib:.0f} MiB for {n:,} entries")
    assert peak_mib < 300, peak_mib


def test_a_million_entry_roster_streamed_from_the_box_parses_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """The same 1,000,000 entries as the box sends them to ``rentcheck pull``: compressed,
    spooled to a file there, read back a piece at a time over exec requests (here the local
    box: real subprocesses), decompressed a piece at a time and parsed into columns as they
    arrive; the spool is deleted afterwards. The peak stays what the columns cost."""
    n = 1_000_000
    path = tmp_path / "PULL_MANIFEST.json"
    write_roster(path, n, sha=lambda i: f"{i:064x}", size=4096)
    peak_mib = peak_rss_mib(f"""
        import io, os, tempfile, zlib
        from rentcheck.box.transport import LocalBox
        from rentcheck.pull.manifest import MAX_MANIFEST_BYTES, read_manifest
        from rentcheck.pull import remote_roster
        from rentcheck.pull.remote_roster import _Answer
        remote_roster.SPOOL_PIECE = 1 << 20  # this roster packs tight: more pieces than 8 MiB
        fd, spool = tempfile.mkstemp(prefix="rentcheck-answer-", dir={str(tmp_path)!r})
        pack = zlib.compressobj(1)
        with open({str(path)!r}, "rb") as source, os.fdopen(fd, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(pack.compress(chunk))
            out.write(pack.flush())
        head = {{"spool": spool, "spool_bytes": os.path.getsize(spool)}}
        assert head["spool_bytes"] > 4 << 20, head  # read back in several pieces
        answer = _Answer(LocalBox(), head, b"", timeout=120, what="t", limit=MAX_MANIFEST_BYTES)
        with answer, io.BufferedReader(answer, 1 << 20) as source:
            manifest = read_manifest(source)
        assert not os.path.exists(spool)
        assert len(manifest.files) == {n} and manifest.total_bytes == {4096 * n}
        assert manifest.files[-1].path == "run/step_00999/sample_0999999.png"
    """)
    print(f"peak RSS {peak_mib:.0f} MiB for {n:,} entries streamed from a spool")
    assert peak_mib < 300, peak_mib


def linked_tree(root: Path, n: int) -> None:
    """``n`` empty files named as ``write_roster`` lists them, 1,000 to a folder: one real
    file per folder, the others hard links to it (cheap to make: a name, not an inode)."""
    for d in range(0, n, 1000):
        folder = root / "run" / f"step_{d // 1000:05d}"
        folder.mkdir(parents=True)
        seed = folder / f"sample_{d:07d}.png"
        seed.touch()
        for i in range(d + 1, min(n, d + 1000)):
            os.link(seed, folder / f"sample_{i:07d}.png")


def test_verify_memory_per_file_is_flat_so_a_million_files_fit(tmp_path: Path) -> None:
    """``rentcheck verify`` (the command: roster, every file read and hashed, the marker
    written) of 25,000 and of 125,000 files, each in a fresh process: what each further file
    costs is the roster's columns and a few bytes of verdict (the old verifier held every path
    and verdict several times, about 1.2 KB a file), so 1,000,000 files stay under 300 MB."""
    peaks = {}
    for n in (25_000, 125_000):
        root, manifest = tmp_path / f"t{n}", tmp_path / f"m{n}.json"
        linked_tree(root, n)
        write_roster(manifest, n, sha=lambda i: EMPTY_SHA, size=0)
        peaks[n] = peak_rss_mib(f"""
            from rentcheck.cli import main
            argv = ["verify", {str(root)!r}, "--manifest", {str(manifest)!r}, "--isolated"]
            assert main(argv) == 0
        """)
        marker = json.loads((root / builder.VERIFIED_NAME).read_bytes())
        assert marker["totals"] == {"files": n, "bytes": 0}
        assert [e["path"] for e in marker["files"]] == [
            f"run/step_{i // 1000:05d}/sample_{i:07d}.png" for i in range(n)
        ]
    per_file = (peaks[125_000] - peaks[25_000]) * (1 << 20) / 100_000
    at_a_million = peaks[125_000] + per_file * 875_000 / (1 << 20)
    print(f"peak RSS {peaks}, {per_file:.0f} bytes per further file, {at_a_million:.0f} MiB at 1M")
    assert per_file < 300, per_file
    assert at_a_million < 300, at_a_million


def test_the_collector_pause_restores_the_previous_state(pulled: Path) -> None:
    assert gc.isenabled()
    assert verify_pull(pulled).findings == ()
    assert gc.isenabled()
    gc.disable()
    try:
        verify_pull(pulled)
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()


def test_a_million_file_marker_loads_in_bounded_memory(tmp_path: Path) -> None:
    """The teardown gate reads PULL_VERIFIED.json of a million-file pull (about 170 MB: the
    old loader stopped at 64 MiB, so any pull over about 400,000 files had "no verified
    pull") streamed into a roster, in a subprocess whose peak RSS stays under 300 MB."""
    n = 1_000_000
    path = tmp_path / builder.VERIFIED_NAME
    payload = {"schema": "rentcheck/pull-verified/v1", "run_id": "big", "verified_at": "now",
               "manifest_sha256": SHA, "policy": {"deep": False}, "files": [],
               "totals": {"files": n, "bytes": n}}  # fmt: skip
    rows = ((f"run/step_{i // 1000:05d}/s_{i:07d}.png", 1, i, f"{i:064x}", "data", 0, 0)
            for i in range(n))  # fmt: skip
    with open(path, "wb") as f:
        for piece in marker_dumps(payload, rows):
            f.write(piece)
    assert path.stat().st_size > 150_000_000
    peak_mib = peak_rss_mib(f"""
        from rentcheck.pull.manifest import position
        from rentcheck.pull.marker import load_verified_marker
        marker = load_verified_marker({str(path)!r})
        files = marker.files
        assert (marker.run_id, len(files), marker.raw["policy"]) == ("big", {n}, {{"deep": False}})
        last = files[-1]
        assert (last.path, last.size, last.mtime_ns) == ("run/step_00999/s_0999999.png", 1, {n - 1})
        assert last.sha256 == "%064x" % ({n} - 1)
        assert position(files, "run/step_00500/s_0500000.png") == 500_000
        assert position(files, "run/step_00500/s_0500000.pngx") is None
    """)
    print(f"peak RSS {peak_mib:.0f} MiB for a {n:,}-file marker")
    assert peak_mib < 300, peak_mib

"""The read pass itself: the pipelined hasher, the buffer pool, the fast NaN/Inf test, progress."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from rentcheck.pull.formats.finite import FLOAT_SPECS, count_nonfinite
from rentcheck.pull.manifest import build_manifest_file
from rentcheck.pull.progress import TerminalProgress, human_bytes
from rentcheck.pull.readpipe import BufferPool, Hasher
from rentcheck.pull.verify import verify_pull


@pytest.mark.parametrize("jobs", [1, 3])
def test_pipelined_and_inline_digests_equal_hashlib(pulled: Path, jobs: int) -> None:
    # One worker: every file over two 64 KiB chunks is hashed on the helper thread, in order.
    # Three workers and many files: small inline reads.
    (pulled / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 12345))
    build_manifest_file(pulled, run_id="run-big")
    result = verify_pull(pulled, chunk_size=64 * 1024, jobs=jobs)
    assert result.findings == ()
    for v in result.files:
        assert v.sha256 == hashlib.sha256((pulled / v.path).read_bytes()).hexdigest(), v.path
    assert any(v.size > 2 * 64 * 1024 for v in result.files)


def test_hasher_threaded_and_inline_agree() -> None:
    data = os.urandom(1_000_003)
    digests = []
    for threaded in (True, False):
        pool = BufferPool()
        hasher = Hasher(pool.take(3, 4096), threaded=threaded)
        view = memoryview(data)
        for i in range(0, len(data), 4096):
            buf = hasher.free.get()
            piece = view[i : i + 4096]
            buf[: len(piece)] = piece
            hasher.submit(buf, len(piece))
        bufs = hasher.close()
        assert len(bufs) == 3 and all(len(b) == 4096 for b in bufs)
        pool.give(bufs)
        again = pool.take(3, 4096)  # the same buffers serve the next file: no new allocation
        assert all(any(a is b for b in bufs) for a in again)
        assert len(pool.take(1, 8192)[0]) == 8192  # another size: a new buffer
        digests.append(hasher.sha.hexdigest())
    assert digests == [hashlib.sha256(data).hexdigest()] * 2


def test_no_helper_threads_outlive_a_verification(pulled: Path) -> None:
    verify_pull(pulled, chunk_size=64 * 1024, jobs=1)
    assert not [t for t in threading.enumerate() if t.name == "rentcheck-sha256"]


@pytest.mark.parametrize("dtype", ["F16", "BF16", "F32", "F64", "C64"])
def test_fast_path_never_hides_a_single_nonfinite_value(dtype: str) -> None:
    """Every NaN/Inf bit pattern (all of them for 16-bit types), alone among the largest
    finite values of both signs, is counted: the two-max shortcut is exact."""
    spec = FLOAT_SPECS[dtype]
    bits = 8 * spec.itemsize
    sign = 1 << (bits - 1)
    top_finite = spec.value - 1  # the largest finite magnitude's bit pattern
    unsigned = f"<u{spec.itemsize}"
    finite = np.array([top_finite, sign | top_finite, 0, sign, 1], dtype=unsigned)
    assert count_nonfinite(np, dtype, finite.tobytes()) == (0, 0)
    if spec.itemsize == 2:
        patterns = [p for p in range(1 << 16) if (p & spec.mask) == spec.value]
    else:  # the edges of the NaN/Inf ranges, both signs
        last = (1 << (bits - 1)) - 1
        patterns = [spec.value, spec.value + 1, last, sign | spec.value, sign | last]
    for p in patterns:
        data = np.append(finite, np.array([p], dtype=unsigned)).tobytes()
        nan, inf = count_nonfinite(np, dtype, data)
        assert nan + inf == 1, hex(p)


def test_progress_line_and_summary() -> None:
    out = io.StringIO()
    progress = TerminalProgress(out, color=False, interval=0)
    progress.start(3 * 1024**3, 7)
    progress.advance(1024**3)
    progress.advance(0, files=1)
    progress.finish()
    text = out.getvalue()
    assert "verify: 0/7 files, 0 B / 3.0 GiB" in text and "--:--" in text  # no ETA yet
    assert "verify: 0/7 files, 1.0 GiB / 3.0 GiB" in text and "ETA " in text
    assert "verify: 1/7 files, 1.0 GiB / 3.0 GiB" in text and " files/s, " in text
    assert "verify: read 1.0 GiB of 1 files in " in text and text.endswith("/s)\n")
    assert "\x1b[2m" not in text
    assert human_bytes(512) == "512 B" and human_bytes(1536) == "1.5 KiB"


def test_progress_counts_every_file_of_a_real_verification(pulled: Path) -> None:
    """Small files (one read each) and large ones (chunked, pipelined) are each counted once,
    and every byte read is counted."""
    (pulled / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 12345))
    build_manifest_file(pulled, run_id="run-big")

    class Count:
        files = nbytes = 0

        def start(self, total_bytes: int, files: int) -> None:
            self.want = (total_bytes, files)

        def advance(self, nbytes: int, files: int = 0) -> None:
            self.nbytes += nbytes
            self.files += files

    count = Count()
    result = verify_pull(pulled, chunk_size=64 * 1024, jobs=2, progress=count)
    assert result.findings == ()
    assert count.want[1] == count.files == len(result.files) > 10
    assert count.nbytes == result.bytes_read == count.want[0] > 3 * 1024 * 1024


@pytest.mark.parametrize("size", [4096, 3 * 1024 * 1024])  # one read, and chunked reads
def test_a_file_changed_or_replaced_after_it_was_listed_is_not_judged(
    tmp_path: Path, size: int
) -> None:
    from rentcheck.pull.filecheck import CheckOptions, read_pass
    from rentcheck.pull.walk import LocalFile, iter_tree

    for name in ("grown", "rewritten", "replaced", "same"):
        (tmp_path / name).write_bytes(os.urandom(size))
    listed = {f.rel: f for f in iter_tree(tmp_path) if isinstance(f, LocalFile)}
    with open(tmp_path / "grown", "ab") as f:
        f.write(b"more")
    data = os.urandom(size)
    with open(tmp_path / "rewritten", "r+b") as f:  # same size, new bytes and mtime
        f.write(data)
    os.utime(tmp_path / "rewritten", ns=(1, listed["rewritten"].mtime_ns + 10**9))
    (tmp_path / "other").write_bytes(os.urandom(size))
    os.replace(tmp_path / "other", tmp_path / "replaced")  # another inode under the name
    opts = CheckOptions(False, (), 1024 * 1024)
    said = {}
    for rel in ("grown", "rewritten", "replaced", "same"):
        out = read_pass(listed[rel], opts)
        said[rel] = [i.message for i in out.issues]
        if rel != "same":
            assert [i.code for i in out.issues] == ["RC520"], rel
    assert "changed while it was being verified" in said["grown"][0]
    assert "changed while it was being verified" in said["rewritten"][0]
    assert "replaced by something else" in said["replaced"][0]
    assert said["same"] == []

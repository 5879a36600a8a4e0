"""rentcheck's own writes: whole file or old file, mode kept, no temp left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rentcheck.atomic import write_atomic


def test_replaces_content_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_bytes(b"old\r\n")
    target.chmod(0o750)
    write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"new\n"
    assert os.stat(target).st_mode & 0o777 == 0o750
    assert os.listdir(tmp_path) == ["run.sh"]


def test_failure_leaves_the_original_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()  # os.replace of a file onto a directory fails
    with pytest.raises(OSError):
        write_atomic(str(target), b"data")
    assert os.listdir(tmp_path) == ["out"]


def test_a_device_or_fifo_target_is_written_into_never_replaced(tmp_path: Path) -> None:
    """`-o /dev/null` as root once replaced /dev/null with a regular file; a FIFO stands in
    for the device here (the same code path: not a regular file)."""
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(str(fifo), b"report\n")
    reader.join(timeout=10)
    assert got == [b"report\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]

"""Reading a file for the checks: exact bytes, the size cap, and never hanging on a FIFO."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rentcheck.lint import source as source_module
from rentcheck.lint.source import FileKind, SourceFile


def test_reads_exact_bytes_mode_and_kind(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    script.chmod(0o750)
    read = SourceFile.read("run.sh", str(script))
    assert read.data == b"#!/bin/sh\r\necho hi\r\n"
    assert read.mode & 0o777 == 0o750 and read.kind is FileKind.SHELL and not read.truncated


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 200_001])
def test_files_at_and_over_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(source_module, "MAX_TEXT_BYTES", 65_536)
    blob = tmp_path / "blob.sh"
    blob.write_bytes(os.urandom(size))
    read = SourceFile.read("blob.sh", str(blob))
    assert read.truncated is (size > 65_536)
    assert read.data == blob.read_bytes()[: 65_536 + 1]


def test_a_fifo_in_place_of_a_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    import signal

    def hung(*_: object) -> None:
        raise AssertionError("reading a FIFO blocked (no O_NONBLOCK?)")

    fifo = tmp_path / "train.sh"
    os.mkfifo(fifo)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with pytest.raises(OSError):
            SourceFile.read("train.sh", str(fifo))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_pickled_source_file_carries_its_fields_not_its_derived_data(tmp_path: Path) -> None:
    """Worker processes send SourceFiles back: the bytes once, not the decoded text too."""
    import pickle

    path = tmp_path / "run.sh"
    path.write_bytes(b"#!/bin/sh\necho caf\xc3\xa9\n")
    source = SourceFile.read("run.sh", str(path))
    assert "café" in source.text  # computed and kept on the instance
    source.memo["shell"] = object()  # per-run parses cannot cross a process boundary
    copy = pickle.loads(pickle.dumps(source))  # noqa: S301 - our own bytes
    assert (copy.path, copy.abspath, copy.data, copy.mode, copy.kind, copy.truncated) == (
        source.path,
        source.abspath,
        source.data,
        source.mode,
        source.kind,
        source.truncated,
    )
    assert copy.memo == {} and "text" not in vars(copy)
    assert copy.text == source.text  # decoded again on first use
    fresh = SourceFile.read("run.sh", str(path))  # nothing decoded or memoised yet
    assert len(pickle.dumps(source)) == len(pickle.dumps(fresh))

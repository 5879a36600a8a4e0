"""Small files checked in a process pool: the same verdicts as in one process, and a worker
that dies or a parent that is interrupted leaves no process behind."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from rentcheck.pull.manifest import build_manifest_file, load_manifest
from rentcheck.pull.smallpool import WorkerError
from rentcheck.pull.verdicts import rows_of
from rentcheck.pull.verify import VerifyResult, verify_tree


def _children() -> set[int]:
    """The pids of this process's live children (from /proc: no helper library)."""
    me, found = os.getpid(), set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me and fields[0] != "Z":
                found.add(int(name))
    return found


def _tree(root: Path, pulled: Path, count: int) -> Path:
    """``count`` small files beside the corpus's checkpoints, then damage of every kind
    after the manifest was built."""
    shutil.copytree(pulled, root)
    for i in range(count):
        folder = root / "samples" / f"step_{i // 100:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"s_{i:05d}.png").write_bytes(i.to_bytes(4, "little") * 64)
    torch.save({"w": torch.ones(3)}, root / "samples" / "small.pt")
    torch.save({"w": torch.tensor([1.0, float("nan")])}, root / "samples" / "nan.pt")
    (root / "samples" / "bad.json").write_text('{"loss": ')
    evil = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."
    (root / "samples" / "step_0007" / "evil.pkl").write_bytes(evil)
    build_manifest_file(root, run_id="pool-run")
    (root / "samples" / "step_0003" / "s_00300.png").write_bytes(b"F" * 256)  # digest
    (root / "samples" / "step_0004" / "s_00400.png").write_bytes(b"short")  # size
    (root / "samples" / "step_0005" / "s_00500.png").unlink()  # missing
    (root / "samples" / "step_0006" / "extra.png").write_bytes(b"x")  # unexpected
    return root


def _said(result: VerifyResult) -> tuple[object, ...]:
    findings = [(f.code, f.path, f.message) for f in result.findings]
    return tuple(findings), tuple(rows_of(result.files)), result.bytes_read


def test_the_pool_gives_the_same_verdicts_as_one_process(pulled: Path, tmp_path: Path) -> None:
    root = _tree(tmp_path / "run", pulled, 1200)
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    before = _children()
    inline = verify_tree(root, manifest, jobs=1)
    pooled = verify_tree(root, manifest, jobs=2, pool_min_files=0)
    assert _said(pooled) == _said(inline)
    codes = {code for code, _, _ in _said(pooled)[0]}  # type: ignore[misc]
    assert {"RC506", "RC507", "RC508", "RC509", "RC514", "RC516", "RC518"} <= codes, codes
    assert len(pooled.files) > 1200 and not pooled.ok
    assert _children() == before  # every worker reaped


class _OnAnswer:
    """Progress that calls ``act(n)`` as the parent takes the n-th answer of a worker."""

    def __init__(self, act: Callable[[int], None]) -> None:
        self.act, self.answers = act, 0

    def start(self, total_bytes: int, files: int) -> None:
        pass

    def advance(self, nbytes: int, files: int = 0) -> None:
        self.answers += files
        self.act(self.answers)


def test_a_worker_that_dies_is_an_error_and_nothing_is_left(pulled: Path, tmp_path: Path) -> None:
    root = _tree(tmp_path / "run", pulled, 3000)
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    before = _children()
    killed = []

    def kill_one(answers: int) -> None:
        if answers == 1:  # the first answer: one worker is killed while the others work
            killed.append(min(_children() - before))  # a pool worker, not another test's child
            os.kill(killed[0], signal.SIGKILL)

    with pytest.raises(WorkerError, match="killed by SIGKILL"):
        verify_tree(root, manifest, jobs=2, pool_min_files=0, progress=_OnAnswer(kill_one))
    assert killed and _children() == before


def test_an_interrupted_verify_stops_and_reaps_its_workers(pulled: Path, tmp_path: Path) -> None:
    root = _tree(tmp_path / "run", pulled, 3000)
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    before = _children()

    def interrupt(answers: int) -> None:
        if answers == 300:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        verify_tree(root, manifest, jobs=2, pool_min_files=0, progress=_OnAnswer(interrupt))
    assert _children() == before


def test_what_a_worker_raises_is_raised_in_the_parent_with_its_traceback() -> None:
    # A batch the worker cannot read (here: not files) is its own exception, raised again in
    # the parent with the worker's traceback as the cause.
    from rentcheck.pull import smallpool
    from rentcheck.pull.filecheck import CheckOptions

    got = []
    before = _children()  # under xdist: other tests' children (an sshd, a fork server) too
    pool = smallpool.SmallFilePool(1, CheckOptions(False, (), 1 << 20), lambda o, at: got.append(o))
    pool._submit([(("not", "a"), None)], [None])
    workers = _children() - before
    with pytest.raises(TypeError) as info:
        pool.close()
    assert "LocalFile" in str(info.value.__cause__) and got == []
    assert workers and not _children() & workers  # the worker was reaped all the same

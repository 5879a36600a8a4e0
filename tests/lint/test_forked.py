"""fork_map: forked workers give the serial answer, share tasks as they go, and fail loudly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rentcheck.errors import UsageError
from rentcheck.lint.forked import WorkerError, fork_map


def _children() -> set[int]:
    """This process's children, running or exited but not reaped (from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == os.getpid():
            found.add(int(entry))
    return found


@pytest.fixture
def no_workers_left():
    """Every worker was reaped: the children after the test are those from before it."""
    before = _children()
    yield
    assert _children() <= before


@pytest.mark.parametrize("count", [1, 7, 1000, 2500])
def test_results_are_the_serial_results_in_item_order(count: int, no_workers_left: None) -> None:
    items = [f"item-{i}" for i in range(count)]
    order = list(reversed(range(count)))  # handed out last first; answered in item order
    assert fork_map(str.upper, items, 3, order) == [s.upper() for s in items]


def test_no_items_forks_nothing() -> None:
    assert fork_map(str.upper, [], 4) == []


def test_work_is_spread_over_the_workers() -> None:
    pids = fork_map(lambda _: os.getpid(), list(range(200)), 2)
    assert os.getpid() not in pids
    assert len(set(pids)) <= 2


def test_a_worker_that_finishes_early_takes_the_remaining_tasks(tmp_path: Path) -> None:
    """Item 0 cannot finish until the last item has been done: with tasks handed out as
    workers ask, the worker holding item 0 does nothing else, the other one does the rest."""
    flag = tmp_path / "last-done"

    def work(index: int) -> int:
        if index == 0:
            deadline = time.monotonic() + 60  # a safety net only; not a timing assertion
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        if index == 49:
            flag.touch()
        return os.getpid()

    pids = fork_map(work, list(range(50)), 2)
    assert flag.exists()
    assert pids.count(pids[0]) == 1, pids


def test_a_worker_exception_is_raised_in_the_parent_with_its_hint(
    no_workers_left: None,
) -> None:
    def work(index: int) -> int:
        if index == 5:
            raise UsageError("tree-sitter-bash does not load", hint="reinstall it")
        return index

    with pytest.raises(UsageError) as caught:
        fork_map(work, list(range(20)), 2)
    assert str(caught.value) == "tree-sitter-bash does not load (reinstall it)"
    assert "Traceback" in str(caught.value.__cause__)  # the worker's own traceback


def test_an_exception_that_cannot_be_pickled_keeps_its_text(no_workers_left: None) -> None:
    class Local(Exception):  # a local class cannot be pickled
        pass

    def work(index: int) -> int:
        if index == 3:
            raise Local("odd failure")
        return index

    with pytest.raises(WorkerError, match="Local: odd failure"):
        fork_map(work, list(range(10)), 2)


def test_a_worker_killed_by_a_signal_is_an_error_naming_it(no_workers_left: None) -> None:
    def work(index: int) -> int:
        if index == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return index

    with pytest.raises(WorkerError, match="killed by SIGKILL"):
        fork_map(work, list(range(10)), 2)


def test_the_parents_buffered_output_is_written_once(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from rentcheck.lint.forked import fork_map\n"
        "sys.stdout.write('before-')\n"  # buffered: no newline, stdout is a pipe
        "print(sum(fork_map(abs, list(range(-50, 50)), 2)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out == "before-2500\n"


def test_fork_map_loads_no_multiprocessing(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from rentcheck.lint.forked import fork_map\n"
        "fork_map(abs, [1, -2], 2)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('multiprocessing', 'threading'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("forks_allowed", [0, 1])
def test_a_refused_fork_leaves_the_work_to_those_there_are(
    monkeypatch: pytest.MonkeyPatch, forks_allowed: int, no_workers_left: None
) -> None:
    """A container's process limit refuses fork(): the run goes on with fewer workers, or in
    this process, with the same results."""
    real_fork, started = os.fork, []

    def limited_fork() -> int:
        if len(started) >= forks_allowed:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", limited_fork)
    pids = fork_map(lambda _: os.getpid(), list(range(300)), 3)
    assert len(started) == forks_allowed
    assert set(pids) == (set(started) if started else {os.getpid()})

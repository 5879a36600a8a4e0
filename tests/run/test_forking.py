"""Relaunches forked from a warmed interpreter (run/forking.py, payload/zygote_serve.py): a forked
run must see and do what a new ``python script.py`` process does, and preloading must import
modules as the cold run did."""

from __future__ import annotations

import json
import signal
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from rentcheck.run.forking import ForkServer, Learned, fork_script, leading_imports
from rentcheck.run.process import Launch, ShimEvents, supervise

PROBE = '''\
"""A script that reports what it sees of its interpreter."""
import json
import os
import sys

seen = {
    "name": __name__,
    "file": __file__,
    "spec": repr(__spec__),
    "argv": sys.argv,
    "path0": sys.path[0],
    "cwd": os.getcwd(),
    "own_session": os.getsid(0) == os.getpid(),
    "stdin": sys.stdin.read(),
    "pause": os.environ.get("RENTCHECK_SHIM_PAUSE"),
    "preloaded": "envreader" in sys.modules,
}
print(json.dumps(seen, sort_keys=True))
log = open("unclosed.txt", "w")  # never closed: the interpreter's exit flushes it
log.write("flushed at exit")
mode = sys.argv[1]
if mode == "exit":
    sys.exit(3)
if mode == "message":
    sys.exit("bad config: no such file")
if mode == "raise":
    raise ValueError("boom")
if mode == "sleep":
    import signal
    import time

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print("ready", flush=True)
    time.sleep(60)
'''


def _launch(root: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Launch:
    state = root / "state"
    state.mkdir(exist_ok=True)
    return Launch(
        argv=(sys.executable, "probe.py", *args),
        cwd=str(root),
        env={"PYTHONUNBUFFERED": "1", **(env or {})},
        timeout=60,
        shim=True,
        shim_settings={"RENTCHECK_SHIM_LOSSES": "1", "RENTCHECK_SHIM_PAUSE": "step"},
        state_dir=str(state),
        name=name,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "probe.py").write_text(PROBE)
    return root


@pytest.fixture
def server(project: Path) -> Iterator[ForkServer]:
    started = ForkServer.start(_launch(project, "server"))
    assert started is not None and started.usable
    yield started
    started.close()


@pytest.mark.parametrize("mode", ["ok", "exit", "message", "raise"])
def test_a_forked_run_sees_and_ends_as_a_new_process_does(
    project: Path, server: ForkServer, mode: str
) -> None:
    results = []
    for spawn in (None, server.spawn):
        (project / "unclosed.txt").unlink(missing_ok=True)
        result = supervise(replace(_launch(project, "run", mode), spawn=spawn))
        results.append(result)
        assert (project / "unclosed.txt").read_text() == "flushed at exit"
    cold, forked = results
    assert not cold.forked and forked.forked
    assert forked.returncode == cold.returncode == {"ok": 0, "exit": 3}.get(mode, 1)
    # Same output line for line: what the script saw, sys.exit's message, the traceback
    # (starting in the script, as without the server).
    assert forked.lines == cold.lines
    seen = json.loads(forked.lines[0])
    assert seen["name"] == "__main__" and seen["file"] == str(project / "probe.py")
    assert seen["argv"] == ["probe.py", mode] and seen["path0"] == str(project)
    assert seen["own_session"] and seen["stdin"] == "" and seen["pause"] == "step"
    if mode == "raise":
        assert forked.lines[-1] == "ValueError: boom"
        assert not any("zygote" in line or "serve.py" in line for line in forked.lines)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_forked_run_is_killed_through_its_group_like_a_new_process(
    project: Path, server: ForkServer, sig: int
) -> None:
    def when_ready(_events: ShimEvents, lines: Sequence[str]) -> int | None:
        return sig if "ready" in lines else None

    result = supervise(replace(_launch(project, "run", "sleep"), spawn=server.spawn), when_ready)
    assert result.forked and result.sent_signal == sig
    # SIGKILL: killed by it; SIGTERM: the script's handler exits with 143.
    assert result.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 143)


def test_preloading_replays_the_scripts_own_environment_changes(
    project: Path, tmp_path: Path
) -> None:
    """A module that reads the environment at import must see what it saw in the cold run."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "envreader.py").write_text("import os\nSEEN = os.environ.get('RC_TEST_FLAG')\n")
    (project / "reads.py").write_text(
        "import os\nimport sys\nos.environ['RC_TEST_FLAG'] = '1'\nimport envreader\n"
        "print(envreader.SEEN, os.environ.get('RC_TEST_FLAG'), flush=True)\n"
    )
    env = {"PYTHONPATH": str(lib)}
    launch = replace(_launch(project, "server", env=env), argv=(sys.executable, "reads.py"))
    # Only the leading imports: the assignment comes before envreader.
    assert leading_imports(str(project / "reads.py")) == [{"name": "os"}, {"name": "sys"}]
    cold = supervise(launch)
    assert cold.lines == ["1 1"]

    def forked_after(preload: list[dict[str, object]]) -> list[str]:
        server = ForkServer.start(launch)
        assert server is not None and server.preload(preload)
        try:
            return supervise(replace(launch, name="run", spawn=server.spawn)).lines
        finally:
            server.close()

    module = {"name": "envreader", "file": str(lib / "envreader.py")}
    # Replayed: envreader imported with the flag set, as in the cold run, and the flag undone
    # (the script sets it again itself).
    assert forked_after([{"env": "RC_TEST_FLAG", "value": "1"}, module]) == ["1 1"]
    # Without the replay the preloaded module would have seen another environment.
    assert forked_after([module]) == ["None 1"]


def test_a_module_that_resolves_to_another_file_is_not_preloaded(
    project: Path, server: ForkServer, tmp_path: Path
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "envreader.py").write_text("SEEN = None\n")
    assert server.preload([{"name": "envreader", "file": str(tmp_path / "other" / "envreader.py")}])
    result = supervise(replace(_launch(project, "run", "ok"), spawn=server.spawn))
    assert json.loads(result.lines[0])["preloaded"] is False


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (("python", "probe.py", "--steps", "4"), "probe.py"),
        (("/env/bin/python3.11", "probe.py"), "probe.py"),
        (("python", "-m", "probe"), None),  # another start-up than a script's
        (("python", "-u", "probe.py"), None),  # interpreter flags
        (("accelerate", "launch", "probe.py"), None),
        (("bash", "run.sh"), None),
        (("python", "missing.py"), None),
    ],
)
def test_only_python_script_commands_fork(
    project: Path, argv: tuple[str, ...], script: str | None
) -> None:
    assert fork_script(argv, str(project)) == script


def test_leading_imports_stop_at_the_first_other_statement_or_project_module(
    tmp_path: Path,
) -> None:
    (tmp_path / "model.py").write_text("")
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            '''\
            """Docstring."""
            from __future__ import annotations
            import os, math
            from torch.utils.data import DataLoader, Dataset
            import model
            import json
            '''
        )
    )
    assert leading_imports(str(script)) == [
        {"name": "os"},
        {"name": "math"},
        {"name": "torch.utils.data", "attrs": ["DataLoader", "Dataset"]},
    ]
    script.write_text("import os\nos.environ['X'] = '1'\nimport json\n")
    assert leading_imports(str(script)) == [{"name": "os"}]


def test_a_reference_slow_to_report_does_not_hold_the_chain_up(
    project: Path, tmp_path: Path
) -> None:
    """Its imports are preloaded before a later run instead."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "envreader.py").write_text("SEEN = None\n")
    launch = _launch(project, "server", env={"PYTHONPATH": str(lib)})
    server = ForkServer.start(launch)
    assert server is not None
    try:
        learned = Learned()
        server.preload_learned(learned, 0.01)  # nothing said yet: the first run goes ahead
        run = replace(launch, name="run", argv=(*launch.argv, "ok"), spawn=server.spawn)
        assert not json.loads(supervise(run).lines[0])["preloaded"]
        module = {"name": "envreader", "file": str(lib / "envreader.py")}
        learned.offer([{"e": "step"}, {"e": "modules", "modules": [module]}])
        server.preload_learned(learned, 0)
        assert json.loads(supervise(run).lines[0])["preloaded"]
    finally:
        server.close()

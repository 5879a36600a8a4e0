"""The sitecustomize shim in real interpreters: it chains, stays inert, and can be bypassed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rentcheck.payload import SHIM_DIR
from rentcheck.run import shimreport
from rentcheck.run.process import Launch, supervise

PROGRAM = (
    "import sys, sitecustomize\n"
    "print('file=' + str(getattr(sitecustomize, '__file__', None)))\n"
    f"print('shim-on-path=' + str(any(p.startswith({SHIM_DIR!r}) for p in sys.path)))\n"
)


def _run(
    tmp_path: Path,
    *flags: str,
    pythonpath: str = SHIM_DIR,
    report: bool = True,
    program: str = PROGRAM,
) -> tuple[str, list[dict]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENTCHECK_SHIM_")}
    env["PYTHONPATH"] = pythonpath
    path = tmp_path / "report.jsonl"
    if report:
        env["RENTCHECK_SHIM_REPORT"] = str(path)
    proc = subprocess.run(
        [sys.executable, *flags, "-c", program], env=env, capture_output=True, text=True, check=True
    )
    events = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return proc.stdout + proc.stderr, events


def test_it_reports_its_start_and_leaves_sys_path_clean(tmp_path: Path) -> None:
    out, events = _run(tmp_path)
    assert "shim-on-path=False" in out
    assert [e["e"] for e in events] == ["start"]  # no torch: no hooks, no exit record
    assert events[0]["chained"] is None and events[0]["argv"] == ["-c"]


def test_it_chains_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    user = tmp_path / "user_site"
    user.mkdir()
    (user / "sitecustomize.py").write_text("print('user sitecustomize ran')\n")
    out, events = _run(tmp_path, pythonpath=f"{SHIM_DIR}{os.pathsep}{user}")
    assert out.count("user sitecustomize ran") == 1
    # The program sees the user's module as `sitecustomize`, exactly as without rentcheck.
    assert f"file={user / 'sitecustomize.py'}" in out
    assert events[0]["chained"] == str(user / "sitecustomize.py")


def test_a_broken_shadowed_sitecustomize_is_reported_like_site_does(tmp_path: Path) -> None:
    user = tmp_path / "user_site"
    user.mkdir()
    (user / "sitecustomize.py").write_text("raise RuntimeError('user bug')\n")
    out, events = _run(tmp_path, pythonpath=f"{SHIM_DIR}{os.pathsep}{user}")
    assert "Error in sitecustomize (chained by rentcheck's shim)" in out and "user bug" in out
    assert events[0]["e"] == "start"  # and the program still ran


def test_without_its_settings_it_only_chains(tmp_path: Path) -> None:
    out, events = _run(tmp_path, report=False)
    assert events == [] and "shim-on-path=False" in out


@pytest.mark.parametrize("flag", ["-I", "-S", "-E"])
def test_isolated_no_site_and_ignore_env_bypass_it(tmp_path: Path, flag: str) -> None:
    out, events = _run(tmp_path, flag, program="print('ran')")
    assert out == "ran\n" and events == []


def test_a_launcher_that_replaces_pythonpath_gets_shim_unavailable(tmp_path: Path) -> None:
    own = tmp_path / "own_site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('their own sitecustomize')\n")
    launcher = tmp_path / "launch.sh"
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH={own} exec {sys.executable} -c "print(1)"\n')
    launcher.chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    launch = Launch(argv=(str(launcher),), cwd=str(tmp_path), env={}, timeout=60, shim=True,
                    state_dir=str(state))  # fmt: skip
    result = supervise(launch)
    assert result.returncode == 0 and "their own sitecustomize" in result.lines
    summary = shimreport.summarize(result.events, injected=True)
    assert summary.status == "unavailable" and "replaces PYTHONPATH" in summary.reason
    assert shimreport.summarize(result.events, injected=False).status == "off"


BUFFERED_SAVES = """
import io, os, torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
os.makedirs("ckpt", exist_ok=True)
for step in (1, 2, 3):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)  # Lightning's way: a buffer, then the file
    with open("ckpt/tmp-last.pt", "wb") as f:
        f.write(buffer.getvalue())
    os.replace("ckpt/tmp-last.pt", "ckpt/last.pt")
print("size", os.path.getsize("ckpt/last.pt"), len(buffer.getvalue()))
"""


def test_a_buffered_save_is_seen_cut_in_its_file_write_and_published(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    state = tmp_path / "state"
    state.mkdir()
    release = state / "save.release"
    release.write_text("")  # released at once: the program goes on after the pause
    launch = Launch(
        argv=(sys.executable, "-c", BUFFERED_SAVES),
        cwd=str(tmp_path),
        env={},
        timeout=120,
        shim=True,
        shim_settings={"RENTCHECK_SHIM_PAUSE": "save"},
        state_dir=str(state),
        name="save",
    )
    result = supervise(launch)
    assert result.returncode == 0, result.lines
    size, expected = result.lines[-1].split()[1:]
    assert size == expected  # the held write was completed: the user's file is whole
    summary = shimreport.summarize(result.events, injected=True)
    assert [s["kind"] for s in summary.saves] == ["buffer"] * 3
    assert summary.pause is not None and summary.pause["reason"] == "save"
    assert summary.pause["step"] == 2 and summary.cut_file == str(tmp_path / "ckpt/tmp-last.pt")
    # Each publish, the one after the released pause included (a kill there would have
    # left step 1's last.pt as the newest complete checkpoint).
    last = str(tmp_path / "ckpt/last.pt")
    assert summary.checkpoint_writes() == [(1, last), (2, last), (3, last)]


IMPORTS_THEN_ENV = """
import os, torch
os.environ["RC_TEST_FLAG"] = "1"  # the program's own change, between two imports
import json
import helper  # the project's own module: runs with the script, never preloaded
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(1, 2)).sum().backward()
opt.step()
"""


def test_the_first_step_reports_the_imports_with_the_programs_own_env_changes(
    tmp_path: Path,
) -> None:
    """What the fork server replays for relaunches (run/forking.py)."""
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(IMPORTS_THEN_ENV)
    (tmp_path / "helper.py").write_text("")
    state = tmp_path / "state"
    state.mkdir()
    launch = Launch(
        argv=(sys.executable, "train.py"),
        cwd=str(tmp_path),
        env={},
        timeout=120,
        shim=True,
        shim_settings={"RENTCHECK_SHIM_MODULES": "1"},
        state_dir=str(state),
        name="modules",
    )
    result = supervise(launch)
    assert result.returncode == 0, result.lines
    [event] = [e for e in result.events if e["e"] == "modules"]
    entries = event["modules"]
    names = [e.get("name") for e in entries]
    assert "helper" not in names and "__main__" not in names
    torch_entry = next(e for e in entries if e.get("name") == "torch")
    assert torch_entry["file"].endswith(os.path.join("torch", "__init__.py"))
    # The program's change comes after torch and what torch imported, and is the only one:
    # torch's cache dir (set during a lazy import) and numpy's OPENBLAS_MAIN_FREE (set and
    # unset during its import) belong to those imports and happen again wherever they run.
    changes = [(i, e) for i, e in enumerate(entries) if "env" in e]
    assert [e for _, e in changes] == [{"env": "RC_TEST_FLAG", "value": "1"}]
    assert changes[0][0] > names.index("torch") > 0 and changes[0][0] > names.index("torch.nn")

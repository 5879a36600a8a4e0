"""End to end on a loopback sshd "box": tinytrain trains there, ``rentcheck pull`` brings the
checkpoints home and verifies them, teardown re-reads the box and judges by content.

Refusals: a checkpoint added on the box after the pull, a file changed on the box, a local
file modified after verify, a missing marker. Passes: with approval; the same content behind a
rebuilt roster with a new run id; a file rewritten on the box with the same bytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.box.sshdkit import SshLab

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="tinytrain needs torch"
)


def _train_on_box(lab: SshLab, run: Path, steps: int) -> None:
    """tinytrain over ssh, as one would start it on a rented box."""
    command = (
        f"cd {run} && {sys.executable} train.py --steps {steps} --ckpt-every 2 "
        "--ckpt-dir checkpoints"
    )
    done = subprocess.run(
        ["ssh", "-F", str(lab.ssh_config), "box", command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert f"done step={steps}" in done.stdout


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def report(res: Ran) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def _ledger(project: Path) -> list[tuple[str, str]]:
    lines = (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    return [(e["gate"], e["verdict"]) for e in map(json.loads, lines)]


def test_tinytrain_pull_and_teardown_on_a_loopback_box(lab: SshLab, tmp_path: Path, cli) -> None:
    run = tmp_path / "box" / "tinytrain"
    shutil.copytree(REPO / "examples" / "tinytrain", run)
    _train_on_box(lab, run, 4)
    project = tmp_path / "project"
    project.mkdir()
    cfg = ["--ssh-config", str(lab.ssh_config)]
    ckpts = run / "checkpoints"

    def rentcheck(*args: str, cwd: Path) -> Ran:  # in-process: a fresh interpreter costs seconds
        res = cli(*args, cwd=cwd)
        return Ran(res.code, res.out, res.err)

    pulled = rentcheck("pull", f"box:{ckpts}", "results", *cfg, cwd=project)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "checkpoint(s) structurally valid, safe to load" in pulled.stdout
    assert "verified: wrote results/PULL_VERIFIED.json" in pulled.stdout
    assert not (ckpts / "PULL_MANIFEST.json").exists()  # nothing left on the box

    def teardown(*extra: str) -> Ran:
        return rentcheck(
            "teardown",
            "--host",
            "box",
            "--verified",
            "results",
            "--profile",
            "runpod",
            *cfg,
            "--output-format",
            "json",
            *extra,
            cwd=project,
        )

    def failing(res: Ran) -> dict[str, set[str | None]]:
        found: dict[str, set[str | None]] = {}
        for r in report(res)["results"]:
            if r["severity"] == "error":
                found.setdefault(r["code"], set()).add(r["path"])
        return found

    refused = teardown()
    assert refused.returncode == 1 and failing(refused) == {"RC804": {None}}
    approved = teardown("--approve")
    assert approved.returncode == 0, approved.stdout
    td = report(approved)["teardown"]
    assert td["approval"] == "--approve" and td["runs_platform_commands"] is False
    assert td["box_now"] == f"box:{ckpts}"
    assert _ledger(project) == [
        ("verify", "pass"),
        ("pull", "pass"),
        ("teardown", "fail"),
        ("teardown", "pass"),
    ]
    said = approved.stderr  # with --output-format json the meter-stop block goes to stderr
    assert "destroys: container-disk (/); volume-disk (/workspace)" in said
    assert "danger clock: a stopped Pod that stays unused is removed (after 30d)" in said
    assert "teardown gate passed: you may now stop the meter yourself." in said

    # The run went on after the pull: a later checkpoint exists only on the box (written as
    # tinytrain writes them, temp + rename; a second training run would cost a torch start).
    tmp = ckpts / "ckpt-000006.pt.tmp"
    shutil.copyfile(ckpts / "ckpt-000004.pt", tmp)
    os.replace(tmp, ckpts / "ckpt-000006.pt")
    later = failing(teardown("--approve"))
    assert "checkpoints/ckpt-000006.pt" not in str(later)  # paths are relative to the root
    assert "ckpt-000006.pt" in later["RC802"], later
    # Pull again (it resumes: only what is new travels), and teardown passes.
    again = rentcheck(
        "pull", f"box:{ckpts}", "results", *cfg, "--output-format", "json", cwd=project
    )
    assert again.returncode == 0, again.stdout
    new_bytes = (ckpts / "ckpt-000006.pt").stat().st_size
    assert report(again)["pull"]["bytes_sent"] < 2 * new_bytes + 65536
    assert teardown("--approve").returncode == 0

    # A file changed on the box since the pull.
    victim = ckpts / "ckpt-000002.pt"
    original = victim.read_bytes()
    victim.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    assert failing(teardown("--approve")) == {"RC802": {"ckpt-000002.pt"}}
    # The same bytes again (a new mtime): content decides, so it passes.
    victim.write_bytes(original)
    assert teardown("--approve").returncode == 0
    rehashed = teardown("--approve", "--rehash")
    assert rehashed.returncode == 0 and report(rehashed)["teardown"]["hashed_on_box"] >= 3

    # The same files behind a rebuilt roster with a new run id.
    built = rentcheck(
        "manifest", "build", "--host", "box", str(ckpts), "--run-id", "rebuilt-2", *cfg, cwd=project
    )
    assert built.returncode == 0, built.stderr
    assert teardown("--approve").returncode == 0
    via_file = rentcheck(
        "teardown",
        "--manifest-now",
        str(ckpts / "PULL_MANIFEST.json"),
        "--verified",
        "results",
        "--profile",
        "runpod",
        "--approve",
        cwd=project,
    )
    assert via_file.returncode == 0, via_file.stdout

    # A local file modified after verify.
    local = project / "results" / "ckpt-000004.pt"
    with open(local, "ab") as handle:
        handle.write(b"x")
    assert failing(teardown("--approve")) == {"RC521": {str(Path("results") / "ckpt-000004.pt")}}
    local.write_bytes(local.read_bytes()[:-1])
    # Same size and bytes, but its mtime moved: hashed here, the same content, so it passes
    # (until issue 28 this was RC521: metadata alone failed a copy that lost nothing).
    assert teardown("--approve").returncode == 0
    # The same size and mtime over other bytes (as `touch -r` leaves it): ctime moved, so
    # it is hashed and named, without --rehash.
    stamp = local.stat()
    data = local.read_bytes()
    local.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    os.utime(local, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert failing(teardown("--approve")) == {"RC521": {str(Path("results") / "ckpt-000004.pt")}}
    local.write_bytes(data)

    # No marker: nothing was verified.
    (project / "results" / "PULL_VERIFIED.json").rename(project / "marker.bak")
    assert "RC801" in failing(teardown("--approve"))

"""Faults a pull must name at once (issue 28, item 4), on real sshd servers on loopback.

A login script that prints before the answer: a second sshd whose ForceCommand echoes a line
and then runs the requested command, as a chatty ~/.bashrc does for every non-interactive ssh
command (the shared HOME's own ~/.bashrc is left alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rentcheck.box.transport import close_all
from rentcheck.pull import remote_roster
from rentcheck.pull.manifest import load_manifest
from rentcheck.pull.transfer import Endpoint, Want, pull_files
from tests.box import sshdkit
from tests.box.sshdkit import SshLab

CHATTY = "ForceCommand echo 'Welcome to your GPU box!'; eval \"$SSH_ORIGINAL_COMMAND\"\n"


@pytest.fixture
def chatty(lab: SshLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An ssh_config whose ``chatty`` alias reaches an sshd with a talkative login."""
    monkeypatch.setattr(sshdkit, "SSHD_CONFIG", sshdkit.SSHD_CONFIG + CHATTY)
    keys = lab.root / "keys"
    server = sshdkit.start_sshd(
        tmp_path / "chatty", lab.root, "chatty", keys / "box_host", lab.box.host_pub
    )
    try:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{server.port} {lab.box.host_pub}\n")
        config = tmp_path / "ssh_config"
        config.write_text(lab.host_block("chatty", server.port, known))
        yield config
    finally:
        close_all()
        server.stop()


def test_login_script_output_before_the_roster_is_named(
    chatty: Path, cli: Any, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("lr=0.1\n")
    res = cli("pull", f"chatty:{run}", "results", "--ssh-config", str(chatty), cwd=tmp_path)
    assert res.code == 2
    said = res.out + res.err
    assert "Welcome to your GPU box!" in said and "before the answer" in said
    assert "login script" in said and "python3 -V" not in said
    assert not (tmp_path / "results" / "PULL_VERIFIED.json").exists()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: a real disk that fills."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _big_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "weights.bin").write_bytes(os.urandom(3 << 20))
    return run


def test_a_pull_that_cannot_fit_is_refused_before_the_first_byte(
    lab: SshLab, small_disk: Path, cli: Any, tmp_path: Path
) -> None:
    run = _big_run(tmp_path)
    res = cli(
        "pull", f"box:{run}", str(small_disk / "results"), "--ssh-config", str(lab.ssh_config),
        "--output-format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert res.code == 1, res.out + res.err
    doc = json.loads(res.out)
    [full] = [r for r in doc["results"] if r["code"] == "RC543"]
    assert "this pull needs" in full["message"] and "bytes short" in full["message"]
    assert f"({small_disk / 'results'}) has" in full["message"]
    assert doc["pull"]["attempts"] == []
    assert not (small_disk / "results" / "PULL_VERIFIED.json").exists()


@pytest.mark.parametrize("method", ["rsync", "ranged"])
def test_a_disk_that_fills_during_the_transfer_is_named_at_once_not_retried(
    lab: SshLab, small_disk: Path, tmp_path: Path, method: str
) -> None:
    run = _big_run(tmp_path)
    endpoint = Endpoint("box", str(run), str(lab.ssh_config))
    local = small_disk / "results"
    local.mkdir()
    waited: list[float] = []
    attempts = pull_files(
        endpoint,
        str(local),
        [Want("weights.bin", 3 << 20)],
        method=method,
        deadline=time.monotonic() + 3600,
        sleep=waited.append,
    )
    assert len(attempts) == 1 and waited == []  # no backoff, no second try
    assert attempts[0].disk_full, attempts[0].error
    assert "space" in (attempts[0].error or "").lower()


def test_a_roster_too_big_for_one_answer_is_spooled_and_read_in_pieces(
    lab: SshLab, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bound scaled down (a real 16 MiB answer takes ~400,000 files): every answer here
    # is over it, so the roster, the re-read and the hashes all travel through the spool.
    monkeypatch.setattr(remote_roster, "INLINE_MAX", 256)
    monkeypatch.setattr(remote_roster, "SPOOL_PIECE", 1000)
    run = tmp_path / "run"
    for n in range(60):
        (run / f"shard-{n // 10}").mkdir(parents=True, exist_ok=True)
        # truly random: about 1 in 2,000 such shards begins with opcodes pickle.load reads
        # (tests/pull/test_pull_random_shards.py holds them to "data" on every path)
        (run / f"shard-{n // 10}" / f"part-{n:05d}.bin").write_bytes(os.urandom(64))
    spools = set(Path(tempfile.gettempdir()).glob("rentcheck-answer-*"))
    ssh = ("--ssh-config", str(lab.ssh_config))
    res = cli("pull", f"box:{run}", "results", *ssh, cwd=tmp_path)
    assert res.code == 0, res.out + res.err
    assert len(load_manifest(tmp_path / "results" / "PULL_MANIFEST.json").files) == 60
    res = cli(
        "teardown", "--host", "box", *ssh, "--verified", "results", "--profile", "runpod",
        "--approve", "--rehash", cwd=tmp_path,
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    assert set(Path(tempfile.gettempdir()).glob("rentcheck-answer-*")) == spools  # cleaned up

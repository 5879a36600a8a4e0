"""``rentcheck push`` installs only verified content: an interrupted upload (SIGINT, SIGKILL, a
dropped connection) never changes the target unless it holds the complete new file; a symlink
planted mid-push is replaced, never followed; a directory is refused; no home is guessed."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sshdkit import SshLab, wait_until

from rentcheck.box.push import push_file
from rentcheck.box.transport import CommandResult, LocalBox, wrap_command
from rentcheck.errors import GateError

NEW_SIZE = 16 << 20


def _temps(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.startswith(".rentcheck-push.")]


def _sshd_sessions(lab: SshLab) -> list[int]:
    """The per-connection sshd processes under the lab's box server (not the shells below)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            names[int(entry)] = stat[stat.index("(") + 1 : stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], list(children.get(lab.box.proc.pid, []))
    while stack:
        pid = stack.pop()
        if names.get(pid) == "sshd":
            found.append(pid)
            stack.extend(children.get(pid, []))
    return found


def _interrupt(kind: str, proc: subprocess.Popen[bytes], lab: SshLab) -> None:
    if kind == "sigint":
        proc.send_signal(signal.SIGINT)
    elif kind == "sigkill":
        proc.kill()
    else:  # the connection drops: the box's sshd session dies, the box itself stays up
        for pid in _sshd_sessions(lab):
            os.kill(pid, signal.SIGKILL)


def test_an_interrupted_push_leaves_the_old_file_or_the_complete_new_one(
    lab: SshLab, tmp_path: Path
) -> None:
    old = b"old content\n" * 100_000
    new = os.urandom(NEW_SIZE)
    source = tmp_path / "new.bin"
    source.write_bytes(new)
    box_dir = tmp_path / "box"
    box_dir.mkdir()
    target = box_dir / "weights.bin"
    rng = random.Random(19)  # noqa: S311 - reproducible interruption points
    outcomes = []
    for kind in ("sigint", "sigkill", "drop") * 2:
        target.write_bytes(old)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rentcheck", "push", str(source), f"box:{target}",
             "--ssh-config", str(lab.ssh_config)],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        # Interrupt mid-upload: once the temp file on the box holds a random share of it.
        share = rng.uniform(0.05, 0.95) * NEW_SIZE
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            sizes = [p.stat().st_size for p in _temps(box_dir) if p.exists()]
            if sizes and max(sizes) >= share:
                break
            time.sleep(0.002)
        _interrupt(kind, proc, lab)
        proc.communicate(timeout=180)  # a dropped link is noticed by keepalives: slow under load
        wait_until(lambda: not _temps(box_dir), f"{kind}: a temp file was left behind")
        content = target.read_bytes()
        assert content in (old, new), f"{kind}: target holds {len(content)} other bytes"
        outcomes.append("old" if content == old else "new")
    assert "old" in outcomes  # at least one interruption really landed mid-upload


class _RacingBox(LocalBox):
    """A real local shell as the box, but its stdin arrives in two halves, and between them
    ``plant`` runs: the window in which someone swaps the target for a symlink."""

    def __init__(self, plant) -> None:
        super().__init__()
        self.name = "racer"
        self.plant = plant

    def run(self, script: str, *, stdin: bytes = b"", timeout: float = 60.0, label: str = ""):
        if not label.startswith("the push"):
            return super().run(script, stdin=stdin, timeout=timeout, label=label)
        start = time.monotonic()
        proc = subprocess.Popen(
            ["sh", "-c", wrap_command(script, timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(stdin[: len(stdin) // 2])
        proc.stdin.flush()
        self.plant()
        out, err = proc.communicate(stdin[len(stdin) // 2 :], timeout=60)
        return CommandResult(proc.returncode, out, err, time.monotonic() - start)


def test_a_symlink_planted_mid_push_is_replaced_not_followed(tmp_path: Path) -> None:
    source = tmp_path / "new.sh"
    source.write_bytes(b"echo new\n" * 1000)
    target = tmp_path / "run.sh"
    target.write_text("echo old\n")
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()

    def plant() -> None:
        # The script checked the target and is receiving the upload: now swap it.
        wait_until(lambda: bool(_temps(tmp_path)), "the push never started its upload")
        target.unlink()
        target.symlink_to(elsewhere)

    result = push_file(_RacingBox(plant), str(source), str(target))
    assert result.verified
    assert list(elsewhere.iterdir()) == []  # nothing was moved into the symlink's directory
    assert not target.is_symlink() and target.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("host", ["box", "local"])
def test_push_onto_a_directory_is_refused_without_a_stray_file(
    cli, lab: SshLab, tmp_path: Path, host: str
) -> None:
    source = tmp_path / "a.sh"
    source.write_text("echo hi\n")
    directory = tmp_path / "dir"
    directory.mkdir()
    dest = [f"box:{directory}"] if host == "box" else [str(directory), "--host", "local"]
    result = cli("push", str(source), *dest, "--ssh-config", str(lab.ssh_config))
    assert result.code == 2 and "is a directory" in result.err, result.err
    assert list(directory.iterdir()) == []


def test_a_box_without_python3_resolves_home_and_relative_paths_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The box's shell finds only these tools: no python3 (so `mv -T` renames).
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("sh", "cat", "wc", "tr", "mktemp", "sha256sum", "chmod", "sync", "mv", "rm",
                 "timeout", "dirname"):  # fmt: skip
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    home = tmp_path / "home"
    (home / "sub").mkdir(parents=True)
    login = tmp_path / "login"
    (login / "rel").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(login)
    box = LocalBox()
    box.name = "nopython"  # the remote code path, on a real shell
    source = tmp_path / "x.txt"
    source.write_bytes(b"payload\n")
    first = push_file(box, str(source), "~/sub/x.txt")
    assert first.target == f"{home}/sub/x.txt" and first.verified
    assert (home / "sub" / "x.txt").read_bytes() == b"payload\n"
    second = push_file(box, str(source), "rel/y.txt")
    assert second.target == f"{login}/rel/y.txt"
    assert (login / "rel" / "y.txt").read_bytes() == b"payload\n"
    assert not (Path("/x.txt").exists() or Path("/sub").exists())
    with pytest.raises(GateError, match="no directory"):
        push_file(box, str(source), "~/missing/x.txt")

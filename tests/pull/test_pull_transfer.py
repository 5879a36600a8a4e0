"""``rentcheck pull``: roster on the box, resumable transfer, refusals, changed-during-pull.

The "box" is a directory on this machine reached with ``--host local`` or through a real
OpenSSH server on 127.0.0.1 (tests/box/sshdkit.py); rsync and the ranged fallback are both
run for real. The interrupted pulls kill the sshd child that serves the transfer.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

import pytest
from pulllab import (
    MiB,
    kill_sshd_children,
    make_box,
    rentcheck,
    report,
    size_of,
    start_rentcheck,
    wait_for,
)

from tests.box.sshdkit import SshLab, sshd_binary, start_lab

HAS_RSYNC = shutil.which("rsync") is not None
METHODS = [
    pytest.param("rsync", marks=pytest.mark.skipif(not HAS_RSYNC, reason="rsync not installed")),
    "ranged",
]


def _same_tree(a: Path, b: Path) -> None:
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    names = [n for n in names if n not in ("PULL_MANIFEST.json", "PULL_VERIFIED.json")]
    for rel in names:
        assert (b / rel).read_bytes() == (a / rel).read_bytes(), rel


@pytest.mark.parametrize("method", METHODS)
def test_local_pull_brings_verifies_and_leaves_nothing_on_the_box(
    tmp_path: Path, method: str
) -> None:
    box = make_box(tmp_path / "box", {"ckpt/a.bin": 3 * MiB, "ckpt/b.bin": 5000, "log.txt": 10})
    res = rentcheck(
        "pull",
        "--host",
        "local",
        str(box),
        "got",
        "--method",
        method,
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    doc = report(res)
    pull = doc["pull"]
    assert pull["method"] == method and pull["files"] == 3 and pull["bytes"] == 3 * MiB + 5010
    # rsync counts its block checksums too: a little over the payload
    assert pull["bytes"] <= pull["bytes_sent"] <= pull["bytes"] * 1.01 + 4096
    assert len(pull["attempts"]) == 1
    _same_tree(box, tmp_path / "got")
    assert (tmp_path / "got" / "PULL_VERIFIED.json").is_file()
    marker = json.loads((tmp_path / "got" / "PULL_VERIFIED.json").read_text())
    assert marker["source"] == {"host": "local", "remote_root": str(box), "run_id": pull["run_id"]}
    assert sorted(p.name for p in box.rglob("*")) == ["a.bin", "b.bin", "ckpt", "log.txt"]
    # Again: nothing is sent twice.
    again = rentcheck(
        "pull",
        "--host",
        "local",
        str(box),
        "got",
        "--method",
        method,
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    assert again.returncode == 0 and report(again)["pull"]["bytes_sent"] == 0


def test_pull_text_says_what_it_pulled_proved_and_wrote(tmp_path: Path) -> None:
    box = make_box(tmp_path / "box", {"a.bin": 1000})
    res = rentcheck("pull", f"local:{box}", "got", "--write-manifest", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"pulled 1 files, 1000 B from local:{box} into {tmp_path / 'got'}" in res.stdout
    assert "verified: wrote got/PULL_VERIFIED.json" in res.stdout
    assert "1 files, 1000 B, all digests match." in res.stdout
    # --write-manifest: the same roster stays on the box too, byte for byte.
    assert (box / "PULL_MANIFEST.json").read_bytes() == (
        tmp_path / "got" / "PULL_MANIFEST.json"
    ).read_bytes()
    ledger = [
        json.loads(x) for x in (tmp_path / ".rentcheck/ledger.jsonl").read_text().splitlines()
    ]
    assert [(e["gate"], e["verdict"]) for e in ledger] == [("verify", "pass"), ("pull", "pass")]


def test_bad_source_and_deadline_are_usage_errors(tmp_path: Path) -> None:
    res = rentcheck("pull", "no-colon-here", "got", cwd=tmp_path)
    assert res.returncode == 2 and "is not HOST:REMOTE_ROOT" in res.stderr
    res = rentcheck("pull", "local:/x", "got", "--deadline", "soon", cwd=tmp_path)
    assert res.returncode == 2 and "--deadline" in res.stderr
    res = rentcheck("pull", f"local:{tmp_path}/absent", "got", cwd=tmp_path)
    assert res.returncode == 2 and "is not a directory on the box" in res.stderr
    assert not (tmp_path / "got").exists()


# --- hostile rosters: refused before the first byte -------------------------------------


def _lying_python(bin_dir: Path, roster: dict[str, object], root: str) -> None:
    """A ``python3`` on the "box" that answers the roster request with ``roster``."""
    bin_dir.mkdir()
    head = json.dumps({"ok": True, "root": root, "rsync": True, "python": "3.11"}).encode()
    answer = bin_dir / "answer"
    answer.write_bytes(head + b"\n" + zlib.compress(json.dumps(roster).encode()))
    fake = bin_dir / "python3"
    fake.write_text(f"#!/bin/sh\ncat >/dev/null\nexec cat {answer}\n")
    fake.chmod(0o755)


def _roster(path: str) -> dict[str, object]:
    entry = {"path": path, "size": 4, "mtime_ns": 1, "sha256": "ab" * 32}
    return {
        "schema": "rentcheck/manifest/v1",
        "run_id": "r1",
        "created_at": "2026-01-01T00:00:00+00:00",
        "host": "evil",
        "files": [entry],
        "leftovers": [],
    }


@pytest.mark.parametrize("hostile", ["../outside.txt", "/tmp/absolute.txt", "a/../../x"])
def test_hostile_roster_paths_are_refused_with_nothing_written(
    tmp_path: Path, hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_box(tmp_path / "box", {"x": 4})
    _lying_python(tmp_path / "bin", _roster(hostile), str(box))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    res = rentcheck("pull", f"local:{box}", "got", "--output-format", "json", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    [refusal] = report(res)["results"]
    assert refusal["code"] == "RC540"
    assert "nothing was pulled" in refusal["message"]
    after = sorted(str(p) for p in tmp_path.rglob("*") if ".rentcheck" not in str(p))
    assert after == before  # no LOCAL_ROOT, no file anywhere


def test_symlink_in_local_root_is_refused_before_the_first_byte(tmp_path: Path) -> None:
    box = make_box(tmp_path / "box", {"ckpt/a.bin": 100, "ckpt/b.bin": 100, "z.txt": 5})
    outside = tmp_path / "outside"
    outside.mkdir()
    got = tmp_path / "got"
    got.mkdir()
    (got / "ckpt").symlink_to(outside)
    res = rentcheck("pull", f"local:{box}", "got", "--output-format", "json", cwd=tmp_path)
    assert res.returncode == 1
    results = report(res)["results"]
    assert {r["code"] for r in results} == {"RC540"}
    assert {r["path"] for r in results} == {"ckpt/a.bin", "ckpt/b.bin"}
    assert "is a symlink" in results[0]["message"]
    assert list(outside.iterdir()) == [] and sorted(os.listdir(got)) == ["ckpt"]


# --- over SSH: resume after the connection is killed ------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_pull_killed_mid_transfer_resumes_without_resending_complete_files(
    lab: SshLab, tmp_path: Path, method: str
) -> None:
    sizes = {"ckpt/step1.bin": 2 * MiB, "ckpt/step2.bin": 4 * MiB, "ckpt/step3.bin": 1 * MiB}
    box = make_box(tmp_path / "box", sizes)
    got = tmp_path / "got"
    proc = start_rentcheck(
        "pull",
        f"box:{box}",
        str(got),
        "--ssh-config",
        str(lab.ssh_config),
        "--method",
        method,
        "--bwlimit",
        "2048",
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    first, second = got / "ckpt/step1.bin", got / "ckpt/step2.bin"
    wait_for(
        lambda: size_of(first) == 2 * MiB and 0 < size_of(second) < 3 * MiB,
        "the pull never got into the second file",
        120,
    )
    assert kill_sshd_children(lab) >= 1
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    pull = report((out, err))["pull"]
    tries = pull["attempts"]
    assert len(tries) >= 2 and tries[0]["error"], tries
    total = sum(sizes.values())
    # The complete file is not sent again; the partial one is continued, not restarted.
    resent = sum(t["bytes"] for t in tries[1:])
    assert resent <= total - 2 * MiB - 1, tries
    assert pull["bytes_sent"] < total + MiB
    _same_tree(box, got)
    assert (got / "PULL_VERIFIED.json").is_file()


def test_ranged_pull_over_ssh_and_manifest_build_on_the_box(lab: SshLab, tmp_path: Path) -> None:
    box = make_box(tmp_path / "box", {"a.bin": 9 * MiB + 3, "b/c.bin": 7})
    cfg = str(lab.ssh_config)
    res = rentcheck(
        "manifest",
        "build",
        "--host",
        "box",
        str(box),
        "--ssh-config",
        cfg,
        "--run-id",
        "run-7",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert f"wrote box:{box}/PULL_MANIFEST.json: 2 files" in res.stdout
    doc = json.loads((box / "PULL_MANIFEST.json").read_text())
    assert doc["run_id"] == "run-7" and doc["totals"]["files"] == 2
    res = rentcheck(
        "pull",
        "--host",
        "box",
        str(box),
        "got",
        "--ssh-config",
        cfg,
        "--method",
        "ranged",
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert report(res)["pull"]["bytes_sent"] == 9 * MiB + 10
    _same_tree(box, tmp_path / "got")


def test_file_that_changes_during_the_pull_is_pulled_again(tmp_path: Path) -> None:
    box = make_box(tmp_path / "box", {"a.bin": 1 * MiB, "b.bin": 3 * MiB})
    got = tmp_path / "got"
    proc = start_rentcheck(
        "pull",
        f"local:{box}",
        str(got),
        "--method",
        "ranged",
        "--bwlimit",
        "2048",
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    wait_for(
        lambda: size_of(got / "a.bin") == MiB and size_of(got / "b.bin") > 0,
        "the pull never reached b.bin",
    )
    with open(box / "a.bin", "ab") as handle:  # the run appends while b.bin is in flight
        handle.write(b"later bytes")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    pull = report((out, err))["pull"]
    assert pull["repulled"] == ["a.bin"]
    assert (got / "a.bin").read_bytes() == (box / "a.bin").read_bytes()
    manifest = json.loads((got / "PULL_MANIFEST.json").read_text())
    assert [f["size"] for f in manifest["files"]] == [MiB + 11, 3 * MiB]


def test_file_still_being_written_is_reported_and_a_vanished_one_too(tmp_path: Path) -> None:
    import threading

    box = make_box(tmp_path / "box", {"a.bin": 2 * MiB, "growing.log": 10, "z.bin": 1 * MiB})
    got = tmp_path / "got"
    stop = threading.Event()

    def writer() -> None:  # a run that goes on writing its log all through the pull
        while not stop.wait(0.05):
            with open(box / "growing.log", "ab") as handle:
                handle.write(b"step\n")

    proc = start_rentcheck(
        "pull",
        f"local:{box}",
        str(got),
        "--method",
        "ranged",
        "--bwlimit",
        "2048",
        "--output-format",
        "json",
        cwd=tmp_path,
    )
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_for(lambda: size_of(got / "a.bin") > 0, "the pull never started")
        (box / "z.bin").unlink()  # deleted on the box before its turn came
        out, err = proc.communicate(timeout=180)
    finally:
        stop.set()
        thread.join()
    assert proc.returncode == 1, out + err
    doc = report((out, err))
    found = {(r["code"], r["path"]) for r in doc["results"] if r["code"] == "RC541"}
    assert found == {("RC541", "growing.log"), ("RC541", "z.bin")}, doc["results"]
    messages = {r["path"]: r["message"] for r in doc["results"] if r["code"] == "RC541"}
    assert "3 times" in messages["growing.log"]
    assert "vanished from the box" in messages["z.bin"]
    assert not (got / "PULL_VERIFIED.json").exists()


def test_a_box_that_stays_gone_ends_the_pull_at_the_deadline(tmp_path: Path) -> None:
    if os.geteuid() != 0 or sshd_binary() is None:
        pytest.skip("needs root and an OpenSSH server")
    own = start_lab(tmp_path / "lab")  # its own server: this test stops it for good
    try:
        box = make_box(tmp_path / "box", {"a.bin": 3 * MiB})
        got = tmp_path / "got"
        proc = start_rentcheck(
            "pull",
            f"box:{box}",
            str(got),
            "--ssh-config",
            str(own.ssh_config),
            "--method",
            "ranged",
            "--bwlimit",
            "1024",
            "--deadline",
            "4s",
            "--output-format",
            "json",
            cwd=tmp_path,
        )
        wait_for(lambda: size_of(got / "a.bin") > 0, "the pull never started")
        own.stop()
        out, err = proc.communicate(timeout=120)
    finally:
        own.stop()
    assert proc.returncode == 1, out + err
    doc = report((out, err))
    [incomplete] = [r for r in doc["results"] if r["code"] == "RC542"]
    assert "what arrived is kept" in incomplete["message"]
    assert 0 < size_of(got / "a.bin") < 3 * MiB  # kept for the next pull to continue
    assert not (got / "PULL_MANIFEST.json").exists()


def test_pull_never_takes_settings_from_what_it_pulled(cli, tmp_path: Path) -> None:
    # The box plants a rentcheck.yaml widening the allow-list next to a hostile pickle, and
    # the person runs the pull from inside the folder it pulls into.
    box = tmp_path / "box"
    box.mkdir()
    (box / "state.pkl").write_bytes(
        b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."
    )
    (box / "rentcheck.yaml").write_text("verify:\n  allow_globals: [os.system, posix.system]\n")
    here = tmp_path / "results"
    here.mkdir()
    first = cli("pull", f"local:{box}", ".", "--output-format", "json", cwd=here)
    assert (here / "rentcheck.yaml").is_file()  # pulled, as data
    again = cli("pull", f"local:{box}", ".", "--output-format", "json", cwd=here)
    for res in (first, again):
        assert res.code == 1, res.out
        doc = json.loads(res.out)
        assert "RC514" in {r["code"] for r in doc["results"]}
        assert doc["verify"]["settings"]["allow_globals"] == []
    assert not (here / "PULL_VERIFIED.json").exists()


def test_teardown_on_a_terminal_passes_only_when_the_verb_is_typed(tmp_path: Path) -> None:
    import pty
    import subprocess
    import sys

    box = make_box(tmp_path / "box", {"a.bin": 100})
    assert rentcheck("pull", f"local:{box}", "got", cwd=tmp_path).returncode == 0

    def on_a_terminal(typed: bytes) -> tuple[int, str]:
        controller, terminal = pty.openpty()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rentcheck",
                "teardown",
                "--host",
                "local",
                "--verified",
                "got",
                "--profile",
                "vastai",
            ],
            cwd=tmp_path,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
        os.close(terminal)
        said = b""
        while b"to approve it" not in said:
            said += os.read(controller, 4096)
        os.write(controller, typed)
        out, _ = proc.communicate(timeout=60)
        os.close(controller)
        return proc.returncode, (said + out).decode()

    code, text = on_a_terminal(b"yes\n")
    assert code == 1 and "Type 'destroy' to approve it" in text and "RC804" in text
    code, text = on_a_terminal(b"destroy\n")
    assert code == 0, text
    assert "teardown gate passed" in text
    ledger = [
        json.loads(x) for x in (tmp_path / ".rentcheck/ledger.jsonl").read_text().splitlines()
    ]
    assert [e["evidence"].get("approval") for e in ledger if e["gate"] == "teardown"] == [
        None,
        "typed 'destroy'",
    ]

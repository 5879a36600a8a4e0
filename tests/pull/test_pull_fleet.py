"""``rentcheck pull --hosts TAG|all``: every inventory host's run directory pulled at once into
LOCAL_ROOT/NAME over a real sshd (and ``local``), verified, one merged table; an unreachable
host is a row with its reason and the others complete; one ledger line per host."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pulllab import MiB, make_box, rentcheck

from tests.box.sshdkit import SshLab


def _rows(out: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines[0].split()[0] == "host" and lines[0].split()[-1] == "result", out
    rows = {}
    for line in lines[1:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line
    return rows


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    hosts = {
        "gpu1": {"alias": "box", "tags": ["gpu"]},
        "here": {"alias": "local", "tags": ["gpu"]},
        "down": {"alias": "box-closed"},
    }
    (project / "rentcheck.yaml").write_text(yaml.safe_dump({"hosts": hosts}))
    return project


def test_pull_hosts_pulls_each_into_its_own_folder_and_merges_one_table(
    lab: SshLab, tmp_path: Path
) -> None:
    box = make_box(tmp_path / "run", {"ckpt/a.bin": 2 * MiB, "log.txt": 100})
    project = _project(tmp_path)
    ssh = ("--ssh-config", str(lab.ssh_config))
    res = rentcheck("pull", "--hosts", "all", str(box), "got", *ssh, cwd=project)
    assert res.returncode == 2, res.stdout + res.stderr  # one host could not be reached
    rows = _rows(res.stdout)
    assert set(rows) == {"gpu1", "here", "down", "total"}, res.stdout
    assert rows["gpu1"].endswith("passed") and rows["here"].endswith("passed")
    assert "cannot reach box-closed" in rows["down"]
    assert rows["total"].endswith("3 hosts: 2 passed, 1 error")
    for name in ("gpu1", "here"):
        got = project / "got" / name
        assert (got / "ckpt" / "a.bin").read_bytes() == (box / "ckpt" / "a.bin").read_bytes()
        assert (got / "PULL_VERIFIED.json").is_file()
    assert not (project / "got" / "down").exists()  # nothing made for the unreachable host
    entries = [
        json.loads(line)
        for line in (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    pulls = sorted((e["host"], e["verdict"]) for e in entries if e["gate"] == "pull")
    assert pulls == [("gpu1", "pass"), ("here", "pass")]
    # A tag picks its hosts only; the unreachable one is not tried.
    again = rentcheck(
        "pull", "--hosts", "gpu", str(box), "got", *ssh, "--output-format", "json", cwd=project
    )
    assert again.returncode == 0, again.stdout + again.stderr
    doc = json.loads(again.stdout)
    assert doc["exit_code"] == 0
    assert sorted(h["host"] for h in doc["hosts"]) == ["gpu1", "here"]
    assert {h["local_root"] for h in doc["hosts"]} == {"got/gpu1", "got/here"}


def test_pull_hosts_refuses_a_host_name_that_is_no_folder_name(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    hosts = {"../escape": {"alias": "local"}}
    (project / "rentcheck.yaml").write_text(yaml.safe_dump({"hosts": hosts}))
    res = rentcheck("pull", "--hosts", "all", str(tmp_path), "got", cwd=project)
    assert res.returncode == 2
    assert not (project / "got").exists() and not (tmp_path / "escape").exists()
    assert "inventory host '../escape' cannot name a folder under LOCAL_ROOT" in res.stderr

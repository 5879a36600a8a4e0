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


def test_pull_hosts_takes_each_hosts_roots_and_selection_from_the_inventory(
    lab: SshLab, tmp_path: Path
) -> None:
    """No REMOTE_ROOT LOCAL_ROOT: each host's remote_root (or [tool.rentcheck.pull]'s) into
    its local_root (or the project's local_root/NAME); one host ignores RC510."""
    clean = make_box(tmp_path / "clean", {"ckpt/a.bin": MiB})
    unfinished = make_box(tmp_path / "unfinished", {"ckpt/b.bin": 5000, "ckpt/b.pt.tmp": 9})
    project = tmp_path / "project"
    project.mkdir()
    settings = {
        "pull": {"remote_root": str(clean), "local_root": "results"},
        "hosts": {
            "gpu1": {"alias": "box"},
            "strict": {"alias": "box", "remote_root": str(unfinished)},
            "lenient": {
                "alias": "local",
                "remote_root": str(unfinished),
                "local_root": "elsewhere/lenient",
                "ignore": ["RC510"],
            },
        },
    }
    (project / "rentcheck.yaml").write_text(yaml.safe_dump(settings))
    res = rentcheck("pull", "--hosts", "all", "--ssh-config", str(lab.ssh_config),
                    "--output-format", "json", cwd=project)  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    by_host = {h["host"]: h for h in json.loads(res.stdout)["hosts"]}
    assert {name: h["exit_code"] for name, h in by_host.items()} == {
        "gpu1": 0, "strict": 1, "lenient": 0
    }  # fmt: skip
    assert by_host["lenient"]["remote_root"] == str(unfinished)
    got = project / "results" / "gpu1" / "ckpt" / "a.bin"
    assert got.read_bytes() == (clean / "ckpt" / "a.bin").read_bytes()
    assert (project / "results" / "gpu1" / "PULL_VERIFIED.json").is_file()
    assert (project / "results" / "strict" / "ckpt" / "b.bin").is_file()
    assert not (project / "results" / "strict" / "PULL_VERIFIED.json").exists()
    marker = json.loads((project / "elsewhere" / "lenient" / "PULL_VERIFIED.json").read_text())
    assert marker["policy"]["advisory_codes"] == ["RC510"]  # the host's ignore, on record
    entries = [
        json.loads(line)
        for line in (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    ]
    pulls = sorted((e["host"], e["verdict"]) for e in entries if e["gate"] == "pull")
    assert pulls == [("gpu1", "pass"), ("lenient", "pass"), ("strict", "fail")]


def test_pull_hosts_says_what_is_missing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()

    def pull(hosts: dict[str, object], *args: str, pull: object = None) -> str:
        settings = {"hosts": hosts, **({"pull": pull} if pull else {})}
        (project / "rentcheck.yaml").write_text(yaml.safe_dump(settings))
        res = rentcheck("pull", "--hosts", "all", *args, cwd=project)
        assert res.returncode == 2, res.stdout + res.stderr
        return res.stderr

    local = {"alias": "local"}
    assert "has no remote root to pull" in pull({"a": {**local, "local_root": "got"}})
    assert "has no local root to pull into" in pull({"a": {**local, "remote_root": "/x"}})
    assert "REMOTE_ROOT LOCAL_ROOT, or neither" in pull({"a": local}, str(tmp_path))
    shared = {"a": {**local, "local_root": "same"}, "b": {**local, "local_root": "same"}}
    said = pull(shared, pull={"remote_root": "/x"})
    assert "hosts.b.local_root" in said and "also the folder of host 'a'" in said
    assert "pull.remote_root" in pull({"a": local}, pull={"remote_root": ["/x"]})
    assert not list(project.glob("same*"))

"""``rentcheck audit --hosts TAG|all``: the inventory's hosts audited at once against real sshd,
one merged table; a host that cannot be reached is a row with its reason, the others complete."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from sshdkit import SshLab

# the "boxes" are this machine: other tests' live scripts are not what these tests judge
QUIET_AUDIT = {"expect_gpu": False, "script_roots": ["/nonexistent/rentcheck-fleet-test"]}
INVENTORY = {
    "audit": QUIET_AUDIT,
    "hosts": {
        "good": {"alias": "box", "tags": ["gpu"]},
        "small": {
            "alias": "viajump",
            "tags": ["gpu"],
            "paths": {"data": "/"},
            "budget": {"checkpoint_bytes": "9000TiB"},
        },
        "down": {"alias": "box-closed", "tags": ["gpu"]},
        "here": {"alias": "local", "tags": ["cpu"]},
    },
}


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rentcheck.yaml").write_text(yaml.safe_dump(INVENTORY, sort_keys=False))
    return project


def test_tag_runs_its_hosts_and_merges_one_table(cli, lab: SshLab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path)
    result = cli("audit", "--hosts", "gpu", "--ssh-config", str(lab.ssh_config), cwd=project)
    assert result.code == 2, result.out + result.err  # one host could not be checked
    lines = result.out.splitlines()
    header = lines[0].split()
    assert header[0] == "host" and "RC301" in header and header[-1] == "result"
    rows = {line.split()[0]: line for line in lines[1:5]}
    assert set(rows) == {"good", "small", "down", "total"}
    assert rows["good"].endswith("passed")
    assert rows["small"].split()[header.index("RC301")] == "1" and rows["small"].endswith("failed")
    assert "error: cannot reach box-closed" in rows["down"]
    assert rows["total"].endswith("3 hosts: 1 passed, 1 failed, 1 error")
    assert "small: RC301" in result.out or "RC301" in result.out.split("\n\n", 1)[1]
    ledger = (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    recorded = {json.loads(line)["host"]: json.loads(line)["verdict"] for line in ledger}
    assert recorded == {"good": "pass", "small": "fail"}  # the unreachable host proves nothing


def test_json_report_lists_every_host(cli, lab: SshLab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path)
    result = cli(
        "audit", "--hosts", "all", "--jobs", "2", "--ssh-config", str(lab.ssh_config),
        "--output-format", "json", cwd=project,
    )  # fmt: skip
    assert result.code == 2
    doc = json.loads(result.out)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert [h["host"] for h in doc["hosts"]] == ["good", "small", "down", "here"]
    assert by_host["good"]["exit_code"] == 0 and by_host["here"]["exit_code"] == 0
    assert by_host["good"]["transport"]["connections"] == 1
    assert "cannot reach box-closed" in by_host["down"]["error"]
    assert {r["host"] for r in doc["results"] if r["code"] == "RC301"} == {"small"}


def test_unknown_tag_is_a_usage_error(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path)
    result = cli("audit", "--hosts", "tpu", cwd=project)
    assert result.code == 2
    assert "--hosts tpu: no host has that name or tag" in result.err
    assert "known: all, good, small, down, here, cpu, gpu" in result.err


def test_a_hosts_own_ignore_and_select_judge_its_row(cli, lab: SshLab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Three hosts with the same too-small budget: the plain one fails RC301; one ignores
    RC301, one selects only RC302: both pass, each with its own ledger line."""
    small = {"alias": "box", "paths": {"data": "/"}, "budget": {"checkpoint_bytes": "9000TiB"}}
    hosts = {
        "small": small,
        "ignores": {**small, "ignore": ["RC301"]},
        "selects": {**small, "select": ["RC302"]},
    }
    project = tmp_path / "project"
    project.mkdir()
    inventory = {"audit": QUIET_AUDIT, "hosts": hosts}
    (project / "rentcheck.yaml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    result = cli("audit", "--hosts", "all", "--ssh-config", str(lab.ssh_config),
                 "--output-format", "json", cwd=project)  # fmt: skip
    assert result.code == 1, result.out + result.err
    doc = json.loads(result.out)
    assert {h["host"]: h["exit_code"] for h in doc["hosts"]} == {
        "small": 1, "ignores": 0, "selects": 0
    }  # fmt: skip
    assert {r["host"] for r in doc["results"] if r["code"] == "RC301"} == {"small"}
    ledger = (project / ".rentcheck" / "ledger.jsonl").read_text().splitlines()
    recorded = {json.loads(line)["host"]: json.loads(line)["verdict"] for line in ledger}
    assert recorded == {"small": "fail", "ignores": "pass", "selects": "pass"}
    hosts["ignores"]["ignore"] = ["RC3O1"]  # a typo: refused, never a silent pass
    (project / "rentcheck.yaml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    typo = cli("audit", "--hosts", "all", cwd=project)
    assert typo.code == 2
    assert "hosts.ignores.ignore" in typo.err and "did you mean RC301" in typo.err

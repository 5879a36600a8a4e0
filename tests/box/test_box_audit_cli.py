"""``rentcheck audit`` end to end against a real sshd and locally, on the same paths."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sshdkit import SshLab

from rentcheck.box.settings import parse_size


def _project(tmp_path: Path, **audit: Any) -> Path:
    """A project whose rentcheck.yaml audits dirs under ``tmp_path`` (data, durable, a cache)."""
    import yaml

    (tmp_path / "data" / "hf" / "blobs").mkdir(parents=True)
    (tmp_path / "data" / "hf" / "blobs" / "w.bin").write_bytes(b"\0" * 8192)
    (tmp_path / "cache-link").symlink_to(tmp_path / "data" / "hf")
    (tmp_path / "durable").mkdir()
    settings = {
        "paths": {
            "data": str(tmp_path / "data"),
            "durable": str(tmp_path / "durable"),
            "checkpoint": str(tmp_path / "durable" / "ckpt"),
        },
        "caches": [str(tmp_path / "cache-link")],
        "script_roots": [str(tmp_path)],
        "expect_gpu": False,
        **audit,
    }
    project = tmp_path / "project"
    project.mkdir()
    (project / "rentcheck.yaml").write_text(yaml.safe_dump({"audit": settings}))
    return project


def _audit(cli, project: Path, host: str, lab: SshLab, *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli(
        "audit", "--host", host, "--ssh-config", str(lab.ssh_config),
        "--output-format", "json", *extra, cwd=project,
    )  # fmt: skip
    assert result.code in (0, 1), result.err
    return result.code, json.loads(result.out)


def _essence(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((r["code"], r["severity"], r["message"]) for r in doc["results"])


def test_over_ssh_and_locally_the_findings_are_the_same(cli, lab: SshLab, tmp_path: Path) -> None:
    project = _project(tmp_path, threads=4096, budget={"checkpoint_bytes": "900TiB", "keep": 3})
    ssh_code, over_ssh = _audit(cli, project, "box", lab)
    local_code, local = _audit(cli, project, "local", lab)
    assert ssh_code == local_code == 1
    assert _essence(over_ssh) == _essence(local)
    codes = {code for code, _, _ in _essence(local)}
    assert {"RC301", "RC304", "RC307", "RC315"} <= codes  # budget, root-disk durable, threads
    assert all(r["host"] == "box" for r in over_ssh["results"])


def test_budget_bigger_than_free_space_is_rc301(cli, lab: SshLab, tmp_path: Path) -> None:
    project = _project(tmp_path)
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    _, fits = _audit(cli, project, "box", lab, "--budget", str(free // 4))
    assert "RC301" not in {r["code"] for r in fits["results"]}
    _, too_big = _audit(cli, project, "box", lab, "--budget", f"checkpoint={free},keep=2")
    hits = [r for r in too_big["results"] if r["code"] == "RC301"]
    assert {r["details"]["role"] for r in hits} == {"data", "durable", "checkpoint"}
    assert all(r["details"]["budget_bytes"] == 2 * free for r in hits)
    assert parse_size("2GiB") == 2 * 1024**3


def test_one_connection_one_exec_request(cli, lab: SshLab, tmp_path: Path, sshd_events) -> None:
    project = _project(tmp_path)
    count = sshd_events()
    _, doc = _audit(cli, project, "box", lab)
    assert doc["transport"]["connections"] == 1 and doc["transport"]["exec_requests"] == 1
    # The server's own log agrees: one TCP connection, one session channel, one exec.
    assert count("Connection from 127.0.0.1") == 1
    assert count("server_input_channel_open: ctype") == 1  # no other channel of any kind
    assert count("server_input_channel_open: ctype session") == 1
    assert count("req exec") == 1


def _listing(*roots: Path) -> list[tuple[str, int, int, int, float]]:
    entries = []
    for root in roots:
        for current, dirs, files in os.walk(root):
            for name in sorted(dirs + files):
                st = os.lstat(os.path.join(current, name))
                entries.append(
                    (os.path.join(current, name), st.st_ino, st.st_mode, st.st_size, st.st_mtime)
                )
    return sorted(entries)


def test_the_audit_writes_nothing_on_the_box(cli, lab: SshLab, tmp_path: Path) -> None:
    project = _project(tmp_path, torch=True, python="python3")
    probed = [tmp_path / "data", tmp_path / "durable", tmp_path / "cache-link"]
    before = _listing(*probed)
    _, doc = _audit(cli, project, "box", lab)
    assert _listing(*probed) == before
    cache = next(c for c in doc["facts"]["caches"] if c["source"] == "config")
    assert cache["is_symlink"] and cache["size_bytes"] >= 8192  # it was really walked
    assert doc["facts"]["torch"]["python"]  # the interpreter check ran too


def test_json_carries_the_raw_facts(cli, lab: SshLab, tmp_path: Path) -> None:
    from importlib import resources

    import jsonschema

    _, doc = _audit(cli, _project(tmp_path), "box", lab)
    schema = json.loads(
        resources.files("rentcheck").joinpath("resources/report.schema.json").read_text()
    )
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    facts = doc["facts"]
    assert facts["schema"] == "rentcheck/box-facts/v1" and facts["probe"]["kind"] == "python"
    data = facts["paths"]["data"]
    assert data["exists"] and data["mount"]["mount_point"] and data["space"]["inodes_total"] >= 0
    assert facts["memory"]["cgroup_version"] in (1, 2)
    assert facts["cpu"]["nproc"] >= 1
    assert set(facts["tools"]) >= {"tmux", "screen", "setsid", "nohup", "rsync"}
    assert isinstance(facts["unreadable"], list)


def test_unknown_config_key_names_the_key(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("audit:\n  budgett: 1\n")
    result = cli("audit", "--host", "local", cwd=tmp_path)
    assert (
        result.code == 2 and "audit.budgett" in result.err and "did you mean 'budget'" in result.err
    )


@pytest.mark.parametrize("profile", ["runpod"])
def test_profile_decides_the_durable_tier(cli, tmp_path: Path, profile: str) -> None:
    pytest.importorskip("rentcheck.profiles")
    result = cli(
        "audit", "--host", "local", "--profile", profile, "--path", f"checkpoint={tmp_path}",
        "--output-format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1, result.err
    rc304 = [r for r in json.loads(result.out)["results"] if r["code"] == "RC304"]
    assert rc304 and "terminate" in rc304[0]["message"]


def test_audit_through_a_proxyjump_alias(cli, lab: SshLab, tmp_path: Path) -> None:
    project = _project(tmp_path)
    _, direct = _audit(cli, project, "box", lab)
    _, jumped = _audit(cli, project, "viajump", lab)
    assert _essence(jumped) == _essence(direct)
    assert jumped["transport"] == {**jumped["transport"], "connections": 2, "exec_requests": 1}
    doc = jumped
    assert doc["facts"]["paths"]["data"]["exists"]

"""Pull repairs what teardown names (issue 28, item 3), over a real sshd on loopback, by
both transfer paths: a checkpoint the box rewrote at the same size, smaller or larger is
fetched again whole by one ``rentcheck pull``; a symlink inside ROOT arrives (as its target's
bytes); JSON Lines under a ``.json`` name is valid data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.box.sshdkit import SshLab

METHODS = ("rsync", "ranged")


class Run:
    def __init__(self, cli: Any, lab: SshLab, tmp: Path, method: str) -> None:
        self.cli, self.method = cli, method
        self.ssh = ("--ssh-config", str(lab.ssh_config))
        self.box = tmp / "box" / "run"
        self.box.mkdir(parents=True)
        self.project = tmp / "project"
        self.project.mkdir()

    def pull(self) -> dict[str, Any]:
        res = self.cli(
            "pull", f"box:{self.box}", "results", *self.ssh, "--method", self.method,
            "--output-format", "json", cwd=self.project,
        )  # fmt: skip
        doc: dict[str, Any] = json.loads(res.out)
        doc["code"] = res.code
        return doc

    def teardown(self) -> tuple[int, set[str]]:
        res = self.cli(
            "teardown", "--host", "box", *self.ssh, "--verified", "results", "--profile",
            "runpod", "--approve", "--output-format", "json", cwd=self.project,
        )  # fmt: skip
        failing = {r["code"] for r in json.loads(res.out)["results"] if r["severity"] == "error"}
        return res.code, failing


@pytest.fixture(params=METHODS)
def run(request: pytest.FixtureRequest, cli: Any, lab: SshLab, tmp_path: Path) -> Run:
    return Run(cli, lab, tmp_path, request.param)


def _codes(doc: dict[str, Any]) -> set[str]:
    return {r["code"] for r in doc["results"] if r["severity"] == "error"}


@pytest.mark.parametrize("new_size", [4096, 1000, 9000], ids=["same", "smaller", "larger"])
def test_a_checkpoint_rewritten_on_the_box_is_repaired_by_one_pull(run: Run, new_size: int) -> None:
    last = run.box / "last.bin"
    last.write_bytes(b"\x01" * 4096)
    (run.box / "epoch=0.bin").write_bytes(b"\x02" * 2048)
    first = run.pull()
    assert first["code"] == 0, first["results"]
    assert run.teardown()[0] == 0
    last.write_bytes(b"\x03" * new_size)  # the next epoch's save, in place
    code, failing = run.teardown()
    assert code == 1 and failing == {"RC802"}
    again = run.pull()
    assert again["code"] == 0, again["results"]
    assert again["pull"]["refetched"] == ["last.bin"]
    here = run.project / "results" / "last.bin"
    assert here.read_bytes() == b"\x03" * new_size
    assert run.teardown() == (0, set())


def test_a_partial_copy_of_a_rewritten_file_is_not_continued(run: Run) -> None:
    last = run.box / "last.bin"
    last.write_bytes(b"\x05" * 8192)
    local = run.project / "results" / "last.bin"
    local.parent.mkdir(parents=True)
    local.write_bytes(b"\x04" * 1000)  # an earlier try's part, of another version
    pulled = run.pull()
    assert pulled["code"] == 0, pulled["results"]
    assert local.read_bytes() == b"\x05" * 8192


def test_a_symlink_inside_root_arrives_as_its_targets_bytes(run: Run) -> None:
    (run.box / "epoch=3.bin").write_bytes(b"\x09" * 3000)
    os.symlink("epoch=3.bin", run.box / "last.bin")  # Lightning's save_last="link"
    pulled = run.pull()
    assert pulled["code"] == 0, pulled["results"]
    here = run.project / "results" / "last.bin"
    assert not here.is_symlink() and here.read_bytes() == b"\x09" * 3000
    assert run.teardown() == (0, set())


def test_json_lines_in_a_json_file_is_valid_and_a_cut_line_is_named(run: Run) -> None:
    rows = [{"iteration": i, "total_loss": 1.0 / (i + 1)} for i in range(3)]
    metrics = run.box / "metrics.json"  # detectron2 writes JSON Lines under this name
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pulled = run.pull()
    assert pulled["code"] == 0, pulled["results"]
    metrics.write_text(metrics.read_text() + '{"iteration": 3, "total_lo')
    cut = run.pull()
    assert "RC518" in _codes(cut)
    [named] = [r for r in cut["results"] if r["code"] == "RC518"]
    assert "line 4" in named["message"]

"""``rentcheck push``: a running bash keeps its original logic; writing in place breaks it."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest
from sshdkit import SshLab

SCRIPT_V1 = '#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.05; done\necho "v1 finished"\n'
# A longer first part shifts every byte offset, as any real edit does.
SCRIPT_V2 = (
    "#!/bin/bash\n# v2: a new header line that moves everything below it\n"
    'while [ ! -e go ]; do sleep 0.05; done\necho "v2 finished"\nexit 3\n'
)


def _finish(proc, workdir: Path) -> str:
    (workdir / "go").touch()
    out, _ = proc.communicate(timeout=60)
    return str(out.decode())


@pytest.mark.parametrize("host", ["box", "local"])
def test_push_onto_a_running_script_keeps_its_original_logic(
    cli, lab: SshLab, tmp_path: Path, running_script, host: str
) -> None:
    target = tmp_path / "run.sh"
    target.write_text(SCRIPT_V1)
    inode = target.stat().st_ino
    proc = running_script(target)
    new = tmp_path / "v2.sh"
    new.write_text(SCRIPT_V2)
    new.chmod(0o755)
    dest = [f"{host}:{target}"] if host != "local" else [str(target), "--host", "local"]
    result = cli("push", str(new), *dest, "--ssh-config", str(lab.ssh_config), cwd=tmp_path)
    assert result.code == 0, result.err
    assert f"pid {proc.pid}" in result.out and "by rename" in result.out
    assert target.read_text() == SCRIPT_V2 and target.stat().st_ino != inode
    assert target.stat().st_mode & 0o777 == 0o755
    assert [p for p in os.listdir(tmp_path) if "rentcheck" in p] == []  # no temp file left
    assert _finish(proc, tmp_path) == "v1 finished\n" and proc.returncode == 0


def test_the_same_edit_in_place_breaks_the_running_script(tmp_path: Path, running_script) -> None:
    # The hazard push avoids, shown for real: bash continues at its old offset in the new text.
    target = tmp_path / "run.sh"
    target.write_text(SCRIPT_V1)
    proc = running_script(target)
    with open(target, "r+") as handle:
        handle.write(SCRIPT_V2)
    assert _finish(proc, tmp_path) != "v1 finished\n"


def test_push_json_and_verified_digest(cli, lab: SshLab, tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_bytes(os.urandom(300_000))
    out = cli(
        "push", str(source), f"box:{tmp_path}/b.txt", "--ssh-config", str(lab.ssh_config),
        "--output-format", "json",
    )  # fmt: skip
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["verified"] and doc["size"] == 300_000
    assert (tmp_path / "b.txt").read_bytes() == source.read_bytes()
    # A relative destination is relative to the login directory on the box, as with scp.
    relative = os.path.relpath(tmp_path / "c.txt", pwd.getpwuid(os.getuid()).pw_dir)
    out = cli("push", str(source), f"box:{relative}", "--ssh-config", str(lab.ssh_config))
    assert out.code == 0 and f"box:{tmp_path}/c.txt" in out.out, out.err
    assert (tmp_path / "c.txt").read_bytes() == source.read_bytes()


def test_push_refuses_what_it_cannot_do_by_rename(cli, lab: SshLab, tmp_path: Path) -> None:
    source = tmp_path / "a.sh"
    source.write_text("echo hi\n")
    (tmp_path / "real.sh").write_text("old\n")
    (tmp_path / "link.sh").symlink_to(tmp_path / "real.sh")
    cfg = ("--ssh-config", str(lab.ssh_config))
    for dest in (f"box:{tmp_path}/link.sh", f"box:{tmp_path}/no/such/dir/a.sh"):
        refused = cli("push", str(source), dest, *cfg)
        assert refused.code == 2 and "by rename" in refused.err, refused.err
    local = cli("push", str(source), str(tmp_path / "link.sh"), "--host", "local")
    assert local.code == 2 and "symlink" in local.err
    assert (tmp_path / "real.sh").read_text() == "old\n"
    assert cli("push", str(source), "nohost-or-colon").code == 2

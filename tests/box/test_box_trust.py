"""Host keys: unknown -> exit 2 with the fingerprint and the command; changed -> refused; trust."""

from __future__ import annotations

import re
from pathlib import Path

import paramiko
from sshdkit import SshLab


def _fingerprint(lab: SshLab) -> str:
    import base64
    import hashlib

    blob = base64.b64decode(lab.box.host_pub.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _trust_config(lab: SshLab, tmp_path: Path, known: str = "") -> tuple[Path, Path]:
    """A per-test config: its own known_hosts for alias `fresh`, the lab's config included."""
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(known)
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Include {lab.ssh_config}\n" + lab.host_block("fresh", lab.box.port, known_hosts)
    )
    return config, known_hosts


def test_unknown_host_key_exits_2_with_fingerprint_and_command(cli, lab: SshLab) -> None:
    result = cli("audit", "--host", "box-unknown", "--ssh-config", str(lab.ssh_config))
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1
    assert "is unknown" in result.err and _fingerprint(lab) in result.err
    assert f"rentcheck trust box-unknown --ssh-config {lab.ssh_config}" in result.err


def test_changed_host_key_is_refused_loudly(cli, lab: SshLab) -> None:
    result = cli("audit", "--host", "box-changed", "--ssh-config", str(lab.ssh_config))
    assert result.code == 2
    assert "HAS CHANGED" in result.err and "man-in-the-middle" in result.err
    assert "ssh-keygen -R" in result.err and _fingerprint(lab) in result.err


def test_trust_appends_the_key_with_a_record_then_audit_connects(
    cli, lab: SshLab, tmp_path: Path
) -> None:
    config, known_hosts = _trust_config(lab, tmp_path, "# my own line\n")
    refused = cli("audit", "--host", "fresh", "--ssh-config", str(config))
    assert refused.code == 2
    command = re.search(r"`(rentcheck trust [^`]+)`", refused.err)
    assert command is not None
    trusted = cli(*command.group(1).split()[1:])
    assert trusted.code == 0, trusted.err
    assert _fingerprint(lab) in trusted.err  # shown before it was added
    lines = known_hosts.read_text().splitlines()
    assert lines[0] == "# my own line"  # appended, never rewritten
    assert lines[1].startswith("# rentcheck trust fresh: added ssh-ed25519 " + _fingerprint(lab))
    assert lines[2] == f"[127.0.0.1]:{lab.box.port} {lab.box.host_pub}"
    audited = cli(
        "audit", "--host", "fresh", "--ssh-config", str(config), "--no-expect-gpu", "--exit-zero"
    )
    assert audited.code == 0, audited.err
    again = cli("trust", "fresh", "--ssh-config", str(config))
    assert again.code == 0 and "already trusted" in again.out
    assert len(known_hosts.read_text().splitlines()) == 3


def test_trust_never_replaces_a_changed_key(cli, lab: SshLab, tmp_path: Path) -> None:
    old = f"[127.0.0.1]:{lab.box.port} {lab.other_pub}\n"
    config, known_hosts = _trust_config(lab, tmp_path, old)
    result = cli("trust", "fresh", "--ssh-config", str(config))
    assert result.code == 2 and "HAS CHANGED" in result.err
    assert known_hosts.read_text() == old


def test_trust_with_a_wrong_fingerprint_adds_nothing(cli, lab: SshLab, tmp_path: Path) -> None:
    config, known_hosts = _trust_config(lab, tmp_path)
    result = cli("trust", "fresh", "--ssh-config", str(config), "--fingerprint", "SHA256:nope")
    assert result.code == 2 and "not the expected SHA256:nope" in result.err
    assert known_hosts.read_text() == ""


def test_hashed_known_hosts_entries_are_honoured(cli, lab: SshLab, tmp_path: Path) -> None:
    hashed = paramiko.HostKeys.hash_host(f"[127.0.0.1]:{lab.box.port}")
    config, _ = _trust_config(lab, tmp_path, f"{hashed} {lab.box.host_pub}\n")
    result = cli(
        "audit", "--host", "fresh", "--ssh-config", str(config), "--no-expect-gpu", "--exit-zero"
    )
    assert result.code == 0, result.err


def test_trust_off_a_terminal_needs_a_fingerprint_or_yes(cli, lab: SshLab, tmp_path: Path) -> None:
    config, known_hosts = _trust_config(lab, tmp_path)
    refused = cli("trust", "fresh", "--ssh-config", str(config))
    assert refused.code == 2 and "without a confirmation" in refused.err
    assert f"--fingerprint {_fingerprint(lab)}" in refused.err
    assert known_hosts.read_text() == ""
    accepted = cli("trust", "fresh", "--ssh-config", str(config), "--yes")
    assert accepted.code == 0, accepted.err
    assert lab.box.host_pub in known_hosts.read_text()


def _trust_on_a_terminal(config: Path, answer: bytes) -> tuple[int, str]:
    """``rentcheck trust`` on a real pseudo-terminal, answering its question with ``answer``."""
    import os
    import pty
    import subprocess
    import sys
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rentcheck", "trust", "fresh", "--ssh-config", str(config)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=config.parent,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        seen += os.read(master, 4096)
    os.write(master, answer)
    code = proc.wait(60)
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            seen += chunk
    except OSError:  # EIO once the child closed its side
        pass
    os.close(master)
    return code, seen.decode(errors="replace")


def test_trust_on_a_terminal_shows_the_fingerprint_and_asks(lab: SshLab, tmp_path: Path) -> None:
    config, known_hosts = _trust_config(lab, tmp_path)
    code, seen = _trust_on_a_terminal(config, b"n\n")
    assert code == 2 and _fingerprint(lab) in seen and "nothing was added" in seen
    assert known_hosts.read_text() == ""
    code, seen = _trust_on_a_terminal(config, b"y\n")
    assert code == 0, seen
    assert lab.box.host_pub in known_hosts.read_text()


def test_trust_refuses_a_revoked_key(cli, lab: SshLab, tmp_path: Path) -> None:
    revoked = f"@revoked * {lab.box.host_pub}\n"
    config, known_hosts = _trust_config(lab, tmp_path, revoked)
    result = cli("trust", "fresh", "--ssh-config", str(config), "--yes")
    assert result.code == 2 and "IS REVOKED" in result.err
    assert known_hosts.read_text() == revoked
    audit = cli("audit", "--host", "fresh", "--ssh-config", str(config))
    assert audit.code == 2 and "IS REVOKED" in audit.err


def test_a_second_key_of_the_same_type_is_not_a_change(cli, lab: SshLab, tmp_path: Path) -> None:
    name = f"[127.0.0.1]:{lab.box.port}"
    two = f"{name} {lab.other_pub}\n{name} {lab.box.host_pub}\n"
    config, _ = _trust_config(lab, tmp_path, two)
    result = cli(
        "audit", "--host", "fresh", "--ssh-config", str(config), "--no-expect-gpu", "--exit-zero"
    )
    assert result.code == 0, result.err


def test_a_wildcard_entry_with_another_key_is_a_change_not_unknown(
    cli, lab: SshLab, tmp_path: Path
) -> None:
    wild = f"[127.0.0.1]:* {lab.other_pub}\n"
    config, known_hosts = _trust_config(lab, tmp_path, wild)
    result = cli("trust", "fresh", "--ssh-config", str(config), "--yes")
    assert result.code == 2 and "HAS CHANGED" in result.err
    assert known_hosts.read_text() == wild


def test_a_cert_authority_line_is_named_as_unsupported(cli, lab: SshLab, tmp_path: Path) -> None:
    config, _ = _trust_config(lab, tmp_path, f"@cert-authority * {lab.other_pub}\n")
    result = cli("audit", "--host", "fresh", "--ssh-config", str(config))
    assert result.code == 2 and "is unknown" in result.err
    assert "does not check host certificates" in result.err

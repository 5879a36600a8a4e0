"""known_hosts read exactly as OpenSSH reads it: a differential test against the real ``ssh``.

Files are built from a grammar of entry kinds (exact, wildcard, ``?``, lists, negation, hashed,
other hosts; plain, ``@revoked``, ``@cert-authority``; the box's key, another key of its type,
a key of another type; junk lines) and each one is judged twice: by ``ssh -o BatchMode=yes``
against the loopback sshd and by rentcheck. The verdicts must agree.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import paramiko
import pytest
from sshdkit import SshLab, keygen

from rentcheck.box.knownhosts import host_key_status, lookup, match_hostname
from rentcheck.box.sshconfig import resolve_host

JUNK = [
    b"garbage\n",
    b"[127.0.0.1]:1 ssh-ed25519 not-base64!!\n",
    b"# caf\xc3\xa9 comment\n",
    b"\xff\xfe non-utf8 line ssh-ed25519 AAAA\n",
    b"@unknown-marker * ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDxi7mKHvjdf7vHbiAxAyp0CdQ7sv9Ns\n",
    b"\n",
]


def _names(port: int) -> dict[str, str]:
    exact = f"[127.0.0.1]:{port}"
    return {
        "exact": exact,
        "port-wild": "[127.0.0.1]:*",
        "star": "*",
        "question": f"[127.0.0.?]:{port}",
        "list": f"other.example,{exact}",
        "negated": f"*,!{exact}",
        "negated-self": f"{exact},!{exact}",
        "negated-other": f"!other.example,{exact}",
        "hashed": paramiko.HostKeys.hash_host(exact),
        "hashed-other": paramiko.HostKeys.hash_host("[127.0.0.1]:1"),
        "other-port": "[127.0.0.1]:1",
        "bare-ip": "127.0.0.1",
    }


@pytest.fixture(scope="module")
def keys(lab: SshLab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    where = tmp_path_factory.mktemp("khkeys")
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(where / "ecdsa")], check=True
    )
    ecdsa = " ".join((where / "ecdsa.pub").read_text().split()[:2])
    other = keygen(where / "other2")
    return {
        "box": lab.box.host_pub,
        "same-type": lab.other_pub,
        "same-type2": other,
        "ecdsa": ecdsa,
    }


def _cases(port: int, keys: dict[str, str]) -> list[list[bytes]]:
    names = _names(port)
    rng = random.Random(19)  # noqa: S311 - a reproducible grammar, not a secret
    cases: list[list[bytes]] = []
    # Every name form with every key, plain; then every marker on the exact name.
    for name in names.values():
        for key in keys.values():
            cases.append([f"{name} {key}\n".encode()])
    for marker in ("@revoked", "@cert-authority"):
        for key in keys.values():
            for form in ("exact", "star", "negated"):
                cases.append([f"{marker} {names[form]} {key}\n".encode()])
    # Random files of one to four entries, junk lines mixed in.
    for _ in range(60):
        lines = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.2:
                lines.append(rng.choice(JUNK))
                continue
            marker = rng.choice(["", "", "", "@revoked ", "@cert-authority "])
            form, key = rng.choice(list(names)), rng.choice(list(keys))
            lines.append(f"{marker}{names[form]} {keys[key]} c{rng.randint(0, 9)}\n".encode())
        cases.append(lines)
    return cases


def _openssh_verdict(config: Path) -> str:
    proc = subprocess.run(
        ["ssh", "-F", str(config), "-o", "BatchMode=yes", "probe", "true"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    if proc.returncode == 0:
        return "known"
    if "REVOKED HOST KEY" in proc.stderr:
        return "revoked"
    if "HOST IDENTIFICATION HAS CHANGED" in proc.stderr:
        return "changed"
    if "Host key verification failed" in proc.stderr:
        return "unknown"
    raise AssertionError(f"ssh failed for another reason: {proc.stderr}")


def test_verdicts_match_openssh_for_generated_known_hosts_files(
    lab: SshLab, keys: dict[str, str], tmp_path: Path
) -> None:
    offered = paramiko.PKey.from_type_string(
        lab.box.host_pub.split()[0], __import__("base64").b64decode(lab.box.host_pub.split()[1])
    )
    known_hosts = tmp_path / "known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(
        lab.host_block("probe", lab.box.port, known_hosts, "  GlobalKnownHostsFile /dev/null\n")
    )
    spec = resolve_host("probe", str(config))
    disagreements = []
    cases = _cases(lab.box.port, keys)
    for lines in cases:
        known_hosts.write_bytes(b"".join(lines))
        theirs, ours = _openssh_verdict(config), host_key_status(spec, offered)
        if theirs != ours:
            disagreements.append((theirs, ours, b"".join(lines).decode("utf-8", "replace")))
    assert not disagreements, "\n".join(map(str, disagreements))
    assert len(cases) > 100


def test_bad_lines_are_skipped_with_a_note_not_an_error(lab: SshLab, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_bytes(
        b"".join(JUNK) + f"[127.0.0.1]:{lab.box.port} {lab.box.host_pub}\n".encode()
    )
    config = tmp_path / "ssh_config"
    config.write_text(lab.host_block("probe", lab.box.port, known_hosts))
    found = lookup(resolve_host("probe", str(config)))
    assert len(found.entries) == 1
    assert [n.split(": ", 1)[1] for n in found.notes] == [
        "skipped (expected hosts, key type and key)",
        "skipped (the key is not valid base64)",
        "skipped (not UTF-8)",
        "skipped (unknown marker @unknown-marker)",
    ]


def test_match_hostname_follows_openssh_negation() -> None:
    assert match_hostname("box.example", "*.example,!box.example") == -1
    assert match_hostname("Box.Example", "box.EXAMPLE") == 1
    assert match_hostname("box.example", "other,!nothing") == 0
    assert match_hostname("[10.0.0.1]:2222", "[10.0.0.?]:2222") == 1
    assert match_hostname("a[b", "a[b") == 1  # `[` is literal, unlike fnmatch


def test_user_known_hosts_file_none_is_no_file(lab: SshLab, tmp_path: Path, cli) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        lab.host_block("nofile", lab.box.port, Path("none"), "  GlobalKnownHostsFile none\n")
    )
    (tmp_path / "none").write_text(f"[127.0.0.1]:{lab.box.port} {lab.box.host_pub}\n")
    spec = resolve_host("nofile", str(config))
    assert spec.user_known_hosts == () and spec.global_known_hosts == ()
    refused = cli("audit", "--host", "nofile", "--ssh-config", str(config), cwd=tmp_path)
    assert refused.code == 2 and "is unknown" in refused.err  # ./none was not read
    trust = cli("trust", "nofile", "--ssh-config", str(config), "--yes", cwd=tmp_path)
    assert trust.code == 2 and "UserKnownHostsFile is none" in trust.err
    assert (tmp_path / "none").read_text().count("\n") == 1  # ./none was not written either

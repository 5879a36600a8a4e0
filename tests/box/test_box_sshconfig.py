"""Alias resolution: ``ssh -G`` semantics (Include, Match, ProxyJump, tokens), paramiko fallback."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import pytest

from rentcheck.box.sshconfig import parse_jump, resolve_host
from rentcheck.errors import ConnectError, UsageError

CONFIG = """\
Include {dir}/more.conf
Host gpu
  HostName 10.1.2.3
  Port 2222
  User trainer
  IdentityFile {dir}/id_%h
  UserKnownHostsFile {dir}/kh/%h
  ProxyJump bastion
Match host 10.9.*
  Port 2200
Host *
  ServerAliveInterval 7
"""
MORE = """\
Host fromfile
  HostName 10.9.0.1
  User other
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "more.conf").write_text(MORE)
    path = tmp_path / "ssh_config"
    path.write_text(CONFIG.format(dir=tmp_path))
    return path


def test_ssh_g_applies_tokens_jump_and_defaults(config: Path) -> None:
    spec = resolve_host("gpu", str(config))
    assert (spec.hostname, spec.port, spec.user) == ("10.1.2.3", 2222, "trainer")
    assert spec.identity_files == (f"{config.parent}/id_10.1.2.3",)
    assert spec.user_known_hosts == (f"{config.parent}/kh/10.1.2.3",)
    assert spec.proxy_jump == ("bastion",)
    assert spec.server_alive_interval == 7
    assert spec.known_hosts_name == "[10.1.2.3]:2222"
    assert spec.resolved_by == "ssh -G"


def test_ssh_g_follows_include_and_match(config: Path) -> None:
    spec = resolve_host("fromfile", str(config))
    # Include brings the host in; Match (evaluated on the final HostName) sets the port.
    assert (spec.hostname, spec.user, spec.port) == ("10.9.0.1", "other", 2200)
    assert spec.proxy_jump == ()


def test_jump_overrides_user_and_port(config: Path) -> None:
    spec = resolve_host("fromfile", str(config), user="u", port=99)
    assert (spec.user, spec.port) == ("u", 99)


def test_paramiko_fallback_without_an_ssh_binary(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # a PATH with no ssh on it
    spec = resolve_host("gpu", str(config))
    assert spec.resolved_by == "paramiko"
    assert (spec.hostname, spec.port, spec.user) == ("10.1.2.3", 2222, "trainer")
    assert spec.proxy_jump == ("bastion",)
    assert spec.identity_files == (f"{config.parent}/id_10.1.2.3",)


def test_unknown_alias_resolves_to_itself_with_the_login_user(tmp_path: Path) -> None:
    empty = tmp_path / "empty_config"
    empty.write_text("")
    spec = resolve_host("somehost", str(empty))
    assert (spec.hostname, spec.port, spec.user) == ("somehost", 22, getpass.getuser())
    assert spec.known_hosts_name == "somehost"
    home = os.path.expanduser(f"~{getpass.getuser()}")
    assert spec.user_known_hosts[0] == f"{home}/.ssh/known_hosts"


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        resolve_host("-oProxyCommand=evil")
    with pytest.raises(UsageError):
        resolve_host("gpu", str(tmp_path / "missing"))
    broken = tmp_path / "broken"
    broken.write_text("Host x\n  NoSuchOption yes\n")
    with pytest.raises(ConnectError, match="ssh -G x"):
        resolve_host("x", str(broken))


@pytest.mark.parametrize(
    ("hop", "parsed"),
    [
        ("bastion", ("bastion", None, None)),
        ("me@bastion:2022", ("bastion", "me", 2022)),
        ("[::1]:2022", ("::1", None, 2022)),
        ("me@[fe80::1]", ("fe80::1", "me", None)),
    ],
)
def test_parse_jump(hop: str, parsed: tuple[str, str | None, int | None]) -> None:
    assert parse_jump(hop) == parsed

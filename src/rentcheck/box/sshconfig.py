"""Resolve a host alias exactly as OpenSSH would: ``ssh -G ALIAS`` (Include, Match, ProxyJump,
IdentityFile, Port, User, UserKnownHostsFile all applied), falling back to paramiko's parser only
when no ``ssh`` binary exists."""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from rentcheck.errors import ConnectError, UsageError

__all__ = ["HostSpec", "parse_jump", "resolve_host"]

DEFAULT_IDENTITIES = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
DEFAULT_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


@dataclass(frozen=True)
class HostSpec:
    """Everything needed to reach one host, after the user's ssh configuration was applied."""

    alias: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...] = ()
    identities_only: bool = False
    use_agent: bool = True
    proxy_jump: tuple[str, ...] = ()
    proxy_command: str | None = None
    user_known_hosts: tuple[str, ...] = ()
    global_known_hosts: tuple[str, ...] = ()
    host_key_alias: str | None = None
    hash_known_hosts: bool = False
    connect_timeout: float | None = None
    server_alive_interval: int = 0
    config_file: str | None = None
    resolved_by: str = "ssh -G"

    @property
    def known_hosts_name(self) -> str:
        """The name known_hosts files list this host under (OpenSSH's rules)."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"

    @property
    def cache_key(self) -> tuple[str, int, str]:
        return (self.hostname, self.port, self.user)


def _home() -> str:
    # OpenSSH expands `~` from the password database, not $HOME; so do we.
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # pragma: no cover - a uid without a passwd entry
        return os.path.expanduser("~")


def _expand(text: str, tokens: Mapping[str, str]) -> str:
    if text.startswith("~/") or text == "~":
        text = _home() + text[1:]
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "%" and i + 1 < len(text):
            out.append(tokens.get(text[i + 1], text[i : i + 2]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _tokens(alias: str, hostname: str, port: int, user: str) -> dict[str, str]:
    local = socket.gethostname()
    conn_hash = hashlib.sha1(f"{local}{hostname}{port}{user}".encode()).hexdigest()  # noqa: S324 - OpenSSH's %C is defined as SHA-1
    return {
        "%": "%",
        "h": hostname,
        "p": str(port),
        "r": user,
        "n": alias,
        "d": _home(),
        "u": pwd.getpwuid(os.getuid()).pw_name,
        "i": str(os.getuid()),
        "l": local.split(".")[0],
        "L": local,
        "C": conn_hash,
    }


def parse_jump(hop: str) -> tuple[str, str | None, int | None]:
    """``user@host:port`` (as in ProxyJump) -> (host, user, port)."""
    user = None
    if "@" in hop:
        user, hop = hop.rsplit("@", 1)
    port = None
    if hop.startswith("["):
        host, _, rest = hop[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:])
    elif hop.count(":") == 1:
        host, _, text = hop.partition(":")
        port = int(text)
    else:
        host = hop
    return host, user, port


def _ssh_g(
    ssh: str, alias: str, config_file: str | None, user: str | None, port: int | None
) -> dict[str, list[str]]:
    argv = [ssh, "-G"]
    if config_file:
        argv += ["-F", config_file]
    if user:
        argv += ["-l", user]
    if port:
        argv += ["-p", str(port)]
    argv.append(alias)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConnectError(f"`ssh -G {alias}` failed: {exc}") from exc
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split())[:300]
        raise ConnectError(
            f"`ssh -G {alias}` failed: {detail}", hint="fix the ssh configuration it names"
        )
    values: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        values.setdefault(key.lower(), []).append(value.strip())
    return values


def _known_files(value: str, tokens: Mapping[str, str]) -> tuple[str, ...]:
    # `UserKnownHostsFile none` means no file at all, not a file named "none" here.
    return tuple(_expand(f, tokens) for f in value.split() if f.lower() != "none")


def _from_ssh_g(alias: str, values: Mapping[str, list[str]], config_file: str | None) -> HostSpec:
    def one(key: str, default: str = "") -> str:
        return values.get(key, [default])[0]

    hostname, port, user = one("hostname", alias), int(one("port", "22")), one("user")
    tokens = _tokens(alias, hostname, port, user)
    jump = one("proxyjump", "none")
    command = one("proxycommand", "none")
    timeout = one("connecttimeout", "none")
    agent = one("identityagent", "")
    return HostSpec(
        alias=alias,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=tuple(_expand(f, tokens) for f in values.get("identityfile", [])),
        identities_only=one("identitiesonly", "no") == "yes",
        use_agent=agent.lower() != "none",
        proxy_jump=() if jump == "none" else tuple(h for h in jump.split(",") if h),
        proxy_command=None if command == "none" else _expand(command, tokens),
        user_known_hosts=_known_files(one("userknownhostsfile"), tokens),
        global_known_hosts=_known_files(one("globalknownhostsfile"), tokens),
        host_key_alias=values.get("hostkeyalias", [None])[0],
        hash_known_hosts=one("hashknownhosts", "no") == "yes",
        connect_timeout=None if timeout == "none" else float(timeout),
        server_alive_interval=int(one("serveraliveinterval", "0")),
        config_file=config_file,
    )


def _from_paramiko(
    alias: str, config_file: str | None, user: str | None, port: int | None
) -> HostSpec:
    import paramiko

    path = config_file or os.path.join(_home(), ".ssh", "config")
    parsed = paramiko.SSHConfig.from_path(path) if os.path.exists(path) else paramiko.SSHConfig()
    found = parsed.lookup(alias)
    hostname = str(found.get("hostname", alias))
    the_port = port or int(found.get("port", 22))
    the_user = user or str(found.get("user", pwd.getpwuid(os.getuid()).pw_name))
    tokens = _tokens(alias, hostname, the_port, the_user)
    identities = found.get("identityfile") or list(DEFAULT_IDENTITIES)
    known = str(found.get("userknownhostsfile", " ".join(DEFAULT_KNOWN_HOSTS))).split()
    jump = str(found.get("proxyjump", "none"))
    timeout = found.get("connecttimeout")
    return HostSpec(
        alias=alias,
        hostname=hostname,
        port=the_port,
        user=the_user,
        identity_files=tuple(_expand(str(f), tokens) for f in identities),
        identities_only=str(found.get("identitiesonly", "no")).lower() == "yes",
        proxy_jump=() if jump == "none" else tuple(jump.split(",")),
        proxy_command=found.get("proxycommand"),
        user_known_hosts=_known_files(" ".join(known), tokens),
        global_known_hosts=DEFAULT_GLOBAL_KNOWN_HOSTS,
        host_key_alias=found.get("hostkeyalias"),
        hash_known_hosts=str(found.get("hashknownhosts", "no")).lower() == "yes",
        connect_timeout=float(timeout) if timeout else None,
        server_alive_interval=int(found.get("serveraliveinterval", 0)),
        config_file=config_file,
        resolved_by="paramiko",
    )


def resolve_host(
    alias: str,
    config_file: str | None = None,
    *,
    user: str | None = None,
    port: int | None = None,
    ssh_binary: str | None = "",
) -> HostSpec:
    """The effective settings for ``alias``; ``ssh_binary=""`` finds ``ssh`` on PATH."""
    if not alias or alias.startswith("-") or any(c.isspace() for c in alias):
        raise UsageError(f"{alias!r} is not a host alias", hint="use a Host name from ssh_config")
    if config_file and not os.path.isfile(config_file):
        raise UsageError(f"ssh config {config_file} does not exist")
    ssh = shutil.which("ssh") if ssh_binary == "" else ssh_binary
    if ssh:
        return _from_ssh_g(alias, _ssh_g(ssh, alias, config_file, user, port), config_file)
    try:
        return _from_paramiko(alias, config_file, user, port)
    except ImportError as exc:
        raise UsageError(
            "reaching a box over SSH needs paramiko", hint="pip install 'rentcheck[ssh]'"
        ) from exc

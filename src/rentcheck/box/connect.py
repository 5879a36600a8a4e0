"""Open one authenticated SSH transport to a resolved host (paramiko), ProxyJump included.

The host key is checked against known_hosts before authentication; jump hosts are reached the
way OpenSSH does it, by a ``direct-tcpip`` channel opened on the previous hop's transport.
"""

from __future__ import annotations

import base64
import dataclasses
import errno
import logging
import os
import shlex
import socket
import sys
from typing import TYPE_CHECKING, Any

from rentcheck.box.knownhosts import check_host_key, known_key_types
from rentcheck.box.sshconfig import HostSpec, parse_jump, resolve_host
from rentcheck.errors import ConnectError, RemoteError

if TYPE_CHECKING:
    import paramiko

__all__ = ["DEFAULT_KEEPALIVE", "Connection", "fetch_host_key", "open_connection"]

DEFAULT_KEEPALIVE = 15  # seconds; NAT on cloud networks drops idle sessions silently
MAX_JUMPS = 8
DEFAULT_CONNECT_TIMEOUT = 10.0


@dataclasses.dataclass
class Connection:
    """An authenticated transport plus the jump transports it runs through (closed with it)."""

    spec: HostSpec
    transport: paramiko.Transport
    jumps: list[paramiko.Transport]
    timeout: float = DEFAULT_CONNECT_TIMEOUT  # also how long a channel open or exec may take

    @property
    def handshakes(self) -> int:
        return 1 + len(self.jumps)

    def close(self) -> None:
        self.transport.close()
        for jump in reversed(self.jumps):
            jump.close()


def _socket(spec: HostSpec, timeout: float) -> socket.socket:
    try:
        return socket.create_connection((spec.hostname, spec.port), timeout=timeout)
    except TimeoutError:
        reason = f"no TCP connection within {timeout:g} s"
    except socket.gaierror as exc:
        reason = f"cannot resolve {spec.hostname}: {exc.strerror}"
    except OSError as exc:
        refused = exc.errno == errno.ECONNREFUSED
        reason = "connection refused (nothing listens on that port)" if refused else str(exc)
    raise ConnectError(
        f"cannot reach {spec.alias} ({spec.hostname}:{spec.port}): {reason}",
        hint=f"check the box is running and its port; `ssh -G {spec.alias}` shows what was used",
    )


def _jump_channel(spec: HostSpec, timeout: float | None, depth: int) -> tuple[Any, list[Any]]:
    import paramiko

    if depth >= MAX_JUMPS:
        raise ConnectError(f"ProxyJump chain for {spec.alias} is deeper than {MAX_JUMPS} (a loop?)")
    host, user, port = parse_jump(spec.proxy_jump[-1])
    jump_spec = resolve_host(host, spec.config_file, user=user, port=port)
    if len(spec.proxy_jump) > 1:  # `-J a,b`: b is reached through a, whatever b's config says
        jump_spec = dataclasses.replace(jump_spec, proxy_jump=spec.proxy_jump[:-1])
    jump = _open(jump_spec, timeout, depth + 1)
    try:
        channel = jump.transport.open_channel(
            "direct-tcpip", (spec.hostname, spec.port), ("127.0.0.1", 0), timeout=timeout
        )
    except (paramiko.SSHException, OSError) as exc:
        jump.close()
        raise ConnectError(
            f"jump host {jump_spec.alias} cannot reach {spec.hostname}:{spec.port}: {exc}",
            hint="check HostName/Port of the target as seen from the jump host",
        ) from exc
    return channel, [*jump.jumps, jump.transport]


def _prefer_known_types(transport: paramiko.Transport, spec: HostSpec) -> None:
    # Ask the server for a key type known_hosts already has, as OpenSSH does; otherwise a box
    # with several host keys could present one we hold no record of and look "unknown".
    known = known_key_types(spec)
    if "ssh-rsa" in known:
        known |= {"rsa-sha2-512", "rsa-sha2-256"}
    options = transport.get_security_options()
    current = list(options.key_types)
    options.key_types = [k for k in current if k in known] + [k for k in current if k not in known]


def _public_blob(path: str) -> bytes | None:
    """The public key beside an identity file (``PATH.pub``), as OpenSSH reads it."""
    try:
        with open(path + ".pub", encoding="utf-8") as handle:
            words = handle.read().split()
        return base64.b64decode(words[1]) if len(words) >= 2 else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _keys(spec: HostSpec) -> tuple[list[Any], list[str]]:
    """Keys to offer, in OpenSSH's order, and why others could not be used.

    ssh-agent keys come first (with IdentitiesOnly, only those matching an IdentityFile's
    ``.pub``), then the files the agent does not already hold. A passphrase-protected file is
    used through the agent; without it, the problem names the ``ssh-add`` that helps.
    """
    import paramiko

    wanted = {path: _public_blob(path) for path in spec.identity_files if os.path.isfile(path)}
    agent_keys: list[Any] = []
    problems: list[str] = []
    if spec.use_agent and os.environ.get("SSH_AUTH_SOCK"):
        try:
            agent_keys = list(paramiko.Agent().get_keys())
        except (paramiko.SSHException, OSError) as exc:
            problems.append(f"ssh-agent ({exc})")
    if spec.identities_only:
        agent_keys = [k for k in agent_keys if k.asbytes() in set(wanted.values())]
    keys: list[Any] = list(agent_keys)
    offered = {key.asbytes() for key in keys}
    for path, blob in wanted.items():
        if blob is not None and blob in offered:
            continue  # the agent holds this one: no passphrase needed
        try:
            keys.append(paramiko.PKey.from_path(path))
        except (paramiko.PasswordRequiredException, TypeError):
            # cryptography raises TypeError for an encrypted OpenSSH-format key
            problems.append(
                f"{path} is passphrase-protected and ssh-agent does not hold it "
                f"(run `ssh-add {shlex.quote(path)}`, then rerun)"
            )
        except (paramiko.SSHException, OSError, ValueError) as exc:
            problems.append(f"{path} ({exc})")
    return keys, problems


def _authenticate(transport: paramiko.Transport, spec: HostSpec, timeout: float) -> None:
    import paramiko

    keys, problems = _keys(spec)
    for key in keys:
        try:
            transport.auth_publickey(spec.user, key)
        except paramiko.AuthenticationException as exc:
            if "timeout" in str(exc).lower():
                raise ConnectError(
                    f"{spec.alias} did not finish authentication within {timeout:g} s",
                    hint="the box's sshd hangs (overloaded, or a slow PAM/DNS step); retry or "
                    "raise --connect-timeout",
                ) from exc
            problems.append(f"{key.get_name()} {key.fingerprint} (refused)")
            continue
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectError(f"authentication on {spec.alias} broke off: {exc}") from exc
        if transport.is_authenticated():
            return
    tried = "; ".join(problems) or "no usable key (IdentityFile, ssh-agent)"
    raise ConnectError(
        f"cannot log in to {spec.alias} as {spec.address}: {tried}",
        hint="add your public key to the box's ~/.ssh/authorized_keys or set IdentityFile",
    )


_LOGGING = {"debug": False, "done": False}


def show_ssh_debug(debug: bool) -> None:
    """paramiko's log (banners, kex, its thread's tracebacks) on stderr only with --debug."""
    _LOGGING.update(debug=debug, done=False)


def _route_paramiko_log() -> None:
    if _LOGGING["done"]:
        return
    logger = logging.getLogger("paramiko")
    for old in list(logger.handlers):
        if getattr(old, "rentcheck", False):
            logger.removeHandler(old)
    logger.propagate = False  # never Python's last-resort handler on stderr
    handler: logging.Handler = logging.NullHandler()
    if _LOGGING["debug"]:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_SanitisingFormatter("paramiko: %(levelname)s %(message)s"))
        logger.setLevel(logging.DEBUG)
    handler.rentcheck = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    _LOGGING["done"] = True


class _SanitisingFormatter(logging.Formatter):
    """A box's banner and messages reach the debug log too: escaped, one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        from rentcheck.sanitise import sanitise

        return sanitise(super().format(record))


def _open(
    spec: HostSpec, connect_timeout: float | None, depth: int = 0, *, login: bool = True
) -> Connection:
    import paramiko

    _route_paramiko_log()

    # An explicit --connect-timeout wins over ConnectTimeout in ssh_config, as `ssh -o` does.
    timeout = connect_timeout or spec.connect_timeout or DEFAULT_CONNECT_TIMEOUT
    jumps: list[Any] = []
    if spec.proxy_jump:
        sock, jumps = _jump_channel(spec, timeout, depth)
    elif spec.proxy_command:
        # As ssh does: `$SHELL -c "exec COMMAND"`, so pipes, redirections and quoting work.
        shell = os.environ.get("SHELL") or "/bin/sh"
        sock = paramiko.ProxyCommand(shlex.join([shell, "-c", f"exec {spec.proxy_command}"]))
    else:
        sock = _socket(spec, timeout)
    transport = paramiko.Transport(sock)
    connection = Connection(spec, transport, jumps, timeout)
    try:
        transport.banner_timeout = timeout
        transport.handshake_timeout = timeout
        transport.auth_timeout = timeout
        _prefer_known_types(transport, spec)
        try:
            transport.start_client(timeout=timeout)
            if not transport.initial_kex_done:  # start_client returns quietly on its timeout
                raise paramiko.SSHException(f"no SSH handshake within {timeout:g} s")
        except (paramiko.SSHException, EOFError, OSError) as exc:
            detail = str(exc) or type(exc).__name__
            if "banner" in detail.lower():
                detail = f"no SSH banner within {timeout:g} s"
            raise ConnectError(
                f"SSH handshake with {spec.alias} ({spec.hostname}:{spec.port}) failed: {detail}",
                hint="check that the port is the box's SSH port and that the box is up",
            ) from exc
        if not login:  # `rentcheck trust` only wants the key; jump hops were verified above
            return connection
        check_host_key(spec, transport.get_remote_server_key())
        _authenticate(transport, spec, timeout)
        transport.set_keepalive(spec.server_alive_interval or DEFAULT_KEEPALIVE)
    except BaseException:
        connection.close()
        raise
    return connection


def open_connection(spec: HostSpec, connect_timeout: float | None = None) -> Connection:
    """Connect, verify the host key, authenticate; raises ConnectError/HostKeyError."""
    try:
        return _open(spec, connect_timeout)
    except RemoteError:
        raise
    except OSError as exc:
        raise ConnectError(f"cannot reach {spec.alias}: {exc}") from exc


def fetch_host_key(spec: HostSpec, connect_timeout: float | None = None) -> paramiko.PKey:
    """The key the box presents, without logging in (for ``rentcheck trust``)."""
    connection = _open(spec, connect_timeout, login=False)
    try:
        return connection.transport.get_remote_server_key()
    finally:
        connection.close()

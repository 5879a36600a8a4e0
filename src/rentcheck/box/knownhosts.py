"""Host key trust: known_hosts lookups with a rejecting policy, and the explicit ``trust`` act.

There is no silent auto-add anywhere: an unknown key fails with its fingerprint and the exact
command that accepts it; a changed key is refused loudly and ``trust`` will not replace it.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import shlex
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rentcheck.errors import HostKeyError

if TYPE_CHECKING:
    import paramiko

    from rentcheck.box.sshconfig import HostSpec

__all__ = [
    "check_host_key",
    "fingerprint",
    "host_key_status",
    "known_key_types",
    "record_trust",
    "trust_command",
]


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:`` fingerprint (base64, no padding), as ``ssh-keygen -lf`` prints."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def trust_command(spec: HostSpec, key: paramiko.PKey | None = None) -> str:
    words = ["rentcheck", "trust", spec.alias]
    if spec.config_file:
        words += ["--ssh-config", spec.config_file]
    if key is not None:
        words += ["--fingerprint", fingerprint(key)]
    return shlex.join(words)


def _known_files(spec: HostSpec) -> list[str]:
    return [f for f in (*spec.user_known_hosts, *spec.global_known_hosts) if os.path.isfile(f)]


def _entries(spec: HostSpec) -> Iterator[tuple[str, paramiko.PKey]]:
    """(file, key) for every known_hosts entry that names this host."""
    import paramiko

    for path in _known_files(spec):
        keys = paramiko.HostKeys()
        try:
            keys.load(path)
        except (OSError, paramiko.SSHException) as exc:
            raise HostKeyError(
                f"cannot read known_hosts file {path}: {exc}", hint="fix or remove the bad line"
            ) from exc
        found = keys.lookup(spec.known_hosts_name)
        if found:
            for key in found.values():
                yield path, key


def known_key_types(spec: HostSpec) -> set[str]:
    """Key types known for this host, so the handshake can ask for one of them first."""
    return {key.get_name() for _, key in _entries(spec)}


def host_key_status(spec: HostSpec, key: paramiko.PKey) -> str:
    """``known``, ``unknown`` (no entry for the host) or ``changed`` (entries, none match)."""
    entries = list(_entries(spec))
    if any(known == key for _, known in entries):
        return "known"
    return "changed" if entries else "unknown"


def check_host_key(spec: HostSpec, key: paramiko.PKey) -> None:
    """Return when ``key`` is listed for the host; raise HostKeyError when unknown or changed."""
    entries = list(_entries(spec))
    if any(known == key for _, known in entries):
        return
    offered = f"{key.get_name()} {fingerprint(key)}"
    if entries:
        # Another key of any type for this name: OpenSSH refuses too (a downgrade or a MITM).
        same_type = [(p, k) for p, k in entries if k.get_name() == key.get_name()]
        path, known = (same_type or entries)[0]
        raise HostKeyError(
            f"HOST KEY FOR {spec.alias} ({spec.known_hosts_name}) HAS CHANGED - possible "
            f"man-in-the-middle; refusing to connect: the box offers {offered}, {path} lists "
            f"{known.get_name()} {fingerprint(known)}",
            hint=(
                "if the box was re-imaged, confirm the new fingerprint with the provider, "
                f"remove the old entry with `ssh-keygen -R {shlex.quote(spec.known_hosts_name)} "
                f"-f {shlex.quote(path)}`, then run `{trust_command(spec, key)}`"
            ),
        )
    files = ", ".join(spec.user_known_hosts) or "known_hosts"
    raise HostKeyError(
        f"host key of {spec.alias} ({spec.known_hosts_name}) is unknown (not in {files}); "
        f"the box offers {offered}",
        hint=(
            "if that fingerprint is the box's (check your provider's console), accept it with "
            f"`{trust_command(spec, key)}`"
        ),
    )


def record_trust(spec: HostSpec, key: paramiko.PKey) -> str:
    """Append ``key`` to the user's known_hosts with a comment recording who added it and when.

    Appending (not rewriting) keeps every existing line of the user's file as it was.
    """
    import paramiko

    if not spec.user_known_hosts:
        raise HostKeyError(f"no UserKnownHostsFile is configured for {spec.alias}")
    path = spec.user_known_hosts[0]
    name = spec.known_hosts_name
    if spec.hash_known_hosts:
        name = paramiko.HostKeys.hash_host(name)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (
        f"# rentcheck trust {spec.alias}: added {key.get_name()} {fingerprint(key)} "
        f"for {spec.known_hosts_name} at {stamp}\n"
        f"{name} {key.get_name()} {key.get_base64()}\n"
    )
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_size:
            with open(path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    text = "\n" + text
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return path

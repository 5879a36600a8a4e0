"""Host key trust: known_hosts read with OpenSSH's own rules, and the explicit ``trust`` act.

Matching follows OpenSSH (``sshd(8)`` SSH_KNOWN_HOSTS FILE FORMAT, ``hostfile.c``): a line names
its hosts as a comma-separated list of ``*``/``?`` patterns, ``!pattern`` negates (a negated
match means the line does not apply, whatever else matches), ``|1|salt|hmac`` is a hashed name,
names compare case-insensitively and a non-22 port is written ``[host]:port`` (with ``ssh``'s
fallback to the bare name). Verdicts: ``revoked`` (an ``@revoked`` line lists the offered key:
refused), ``known`` (a plain line lists it), ``changed`` (plain lines list only other keys, of
any type), ``unknown`` otherwise. The differential test against ``ssh`` holds these.
``@cert-authority`` lines are read but host certificates are not supported: the verdict says so.
A line that does not parse (bad base64, non-UTF-8 bytes) is skipped with a note, as OpenSSH
skips it. There is no silent auto-add anywhere.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import os
import re
import shlex
import struct
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rentcheck.errors import HostKeyError

if TYPE_CHECKING:
    import paramiko

    from rentcheck.box.sshconfig import HostSpec

__all__ = [
    "HostEntry",
    "KnownHosts",
    "check_host_key",
    "fingerprint",
    "host_key_status",
    "known_key_types",
    "lookup",
    "match_hostname",
    "record_trust",
    "trust_command",
    "verdict",
]

MARKERS = ("@revoked", "@cert-authority")


@dataclass(frozen=True)
class HostEntry:
    """One known_hosts line that applies to the host being looked up."""

    path: str
    line: int
    marker: str  # "", "@revoked" or "@cert-authority"
    key_type: str
    blob: bytes

    @property
    def fingerprint(self) -> str:
        return _fingerprint_of(self.blob)


@dataclass
class KnownHosts:
    """The entries for one host name across its known_hosts files, and the lines skipped."""

    name: str
    entries: list[HostEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def plain(self) -> list[HostEntry]:
        return [e for e in self.entries if not e.marker]

    def status(self, blob: bytes) -> tuple[str, HostEntry | None]:
        """(verdict, the entry behind it) for the offered key blob, as ``hostfile.c`` decides.

        Any plain entry that does not match makes it ``changed``, whatever its key type: the
        client asked the server for a known type first, so a different one is suspicious too.
        """
        revoked = next((e for e in self.entries if e.marker == "@revoked" and e.blob == blob), None)
        if revoked is not None:
            return "revoked", revoked
        plain = self.plain()
        for entry in plain:
            if entry.blob == blob:
                return "known", entry
        if plain:
            offered_type = _blob_type(blob)
            same_type = [e for e in plain if e.key_type == offered_type]
            return "changed", (same_type or plain)[0]
        return "unknown", None


def _fingerprint_of(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:`` fingerprint (base64, no padding), as ``ssh-keygen -lf`` prints."""
    return _fingerprint_of(key.asbytes())


def _blob_type(blob: bytes) -> str:
    """The key type named inside a public key blob (its first SSH string)."""
    if len(blob) < 4:
        raise ValueError("key blob too short")
    (size,) = struct.unpack(">I", blob[:4])
    if size == 0 or 4 + size > len(blob):
        raise ValueError("key blob has a bad type field")
    return blob[4 : 4 + size].decode("ascii")


def _match_pattern(name: str, pattern: str) -> bool:
    # OpenSSH's match_pattern: only `*` and `?` are special (fnmatch would also treat `[`).
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, name, re.DOTALL) is not None


def match_hostname(name: str, patterns: str) -> int:
    """OpenSSH's ``match_hostname``: 1 match, 0 no match, -1 a negated pattern matched."""
    name = name.lower()
    got = 0
    for item in patterns.lower().split(","):
        negated = item.startswith("!")
        if _match_pattern(name, item[1:] if negated else item):
            if negated:
                return -1
            got = 1
    return got


def _hashed_match(name: str, token: str) -> bool:
    # `|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, as HashKnownHosts writes it.
    parts = token.split("|")
    if len(parts) != 4 or parts[1] != "1":
        raise ValueError("unsupported hashed host name")
    salt = base64.b64decode(parts[2], validate=True)
    want = base64.b64decode(parts[3], validate=True)
    got = hmac.new(salt, name.lower().encode(), hashlib.sha1).digest()
    return hmac.compare_digest(got, want)


def _parse(text: str) -> tuple[str, str, str, bytes] | None:
    """(marker, hosts, key type, blob) of one line; None for blank/comment; ValueError if bad."""
    words = text.split()
    if not words or words[0].startswith("#"):
        return None
    marker = ""
    if words[0].startswith("@"):
        if words[0] not in MARKERS:
            raise ValueError(f"unknown marker {words[0]}")
        marker, words = words[0], words[1:]
    if len(words) < 3:
        raise ValueError("expected hosts, key type and key")
    hosts, key_type, encoded = words[:3]
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key is not valid base64") from None
    if _blob_type(blob) != key_type:
        raise ValueError(f"key type {key_type} does not match the key's own type")
    return marker, hosts, key_type, blob


def _read_file(path: str, name: str, into: KnownHosts) -> None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        into.notes.append(f"{path}: cannot read it ({exc.strerror})")
        return
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            parsed = _parse(raw.decode("utf-8"))
            if parsed is None:
                continue
            marker, hosts, key_type, blob = parsed
            if hosts.startswith("|"):
                applies = _hashed_match(name, hosts)
            else:
                applies = match_hostname(name, hosts) == 1
        except (UnicodeDecodeError, ValueError, binascii.Error) as exc:
            reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
            into.notes.append(f"{path}:{number}: skipped ({reason})")
            continue
        if applies:
            into.entries.append(HostEntry(path, number, marker, key_type, blob))


def _known_files(spec: HostSpec) -> list[str]:
    files = (*spec.user_known_hosts, *spec.global_known_hosts)
    return [f for f in files if f != "none" and os.path.isfile(f)]


def _lookup_name(spec: HostSpec, name: str) -> KnownHosts:
    found = KnownHosts(name)
    for path in _known_files(spec):
        _read_file(path, name, found)
    return found


def lookup(spec: HostSpec) -> KnownHosts:
    """Every known_hosts entry that applies to ``spec``'s host name, in file order."""
    return _lookup_name(spec, spec.known_hosts_name)


def verdict(spec: HostSpec, blob: bytes) -> tuple[str, HostEntry | None, KnownHosts]:
    """(verdict, entry, the lookup it came from) for a key blob the host offers.

    Like ``ssh``, a host on a non-22 port that ``[host]:port`` does not know is also looked up
    by its bare name (without HostKeyAlias); only a match (or a revocation) there counts.
    """
    primary = lookup(spec)
    status, entry = primary.status(blob)
    if status == "unknown" and spec.host_key_alias is None and spec.port != 22:
        bare = _lookup_name(spec, spec.hostname)
        bare_status, bare_entry = bare.status(blob)
        primary.notes.extend(n for n in bare.notes if n not in primary.notes)
        if bare_status in ("known", "revoked"):
            return bare_status, bare_entry, bare
    return status, entry, primary


def known_key_types(spec: HostSpec) -> set[str]:
    """Key types known for this host, so the handshake can ask for one of them first."""
    return {entry.key_type for entry in lookup(spec).plain()}


def host_key_status(spec: HostSpec, key: paramiko.PKey) -> str:
    """``known``, ``unknown``, ``changed`` or ``revoked``, as ``ssh`` would judge ``key``."""
    return verdict(spec, key.asbytes())[0]


_SHOWN_NOTES: set[str] = set()


def _show_notes(known: KnownHosts) -> None:
    # A skipped line is worth one line on stderr per run, not a failure of every host.
    from rentcheck.sanitise import sanitise

    for note in known.notes:
        if note not in _SHOWN_NOTES:
            _SHOWN_NOTES.add(note)
            sys.stderr.write(f"rentcheck: note: known_hosts {sanitise(note)}\n")


def check_host_key(spec: HostSpec, key: paramiko.PKey) -> None:
    """Return when ``key`` is listed for the host; raise HostKeyError otherwise."""
    status, entry, known = verdict(spec, key.asbytes())
    _show_notes(known)
    if status == "known":
        return
    offered = f"{key.get_name()} {fingerprint(key)}"
    name = spec.known_hosts_name
    if status == "revoked" and entry is not None:
        raise HostKeyError(
            f"HOST KEY FOR {spec.alias} ({name}) IS REVOKED - refusing to connect: the box offers "
            f"{offered}, marked @revoked at {entry.path}:{entry.line}",
            hint="the key was revoked on purpose; ask whoever runs the box for its new key",
        )
    if status == "changed" and entry is not None:
        raise HostKeyError(
            f"HOST KEY FOR {spec.alias} ({name}) HAS CHANGED - possible man-in-the-middle; "
            f"refusing to connect: the box offers {offered}, {entry.path}:{entry.line} lists "
            f"{entry.key_type} {entry.fingerprint}",
            hint=(
                "if the box was re-imaged, confirm the new fingerprint with the provider, "
                f"remove the old entry with `ssh-keygen -R {shlex.quote(name)} "
                f"-f {shlex.quote(entry.path)}`, then run `{trust_command(spec, key)}`"
            ),
        )
    files = ", ".join(f for f in spec.user_known_hosts if f != "none") or "no known_hosts file"
    extra = ""
    if any(e.marker == "@cert-authority" for e in known.entries):
        extra += (
            "; an @cert-authority line applies, but rentcheck does not check host certificates "
            "(list the host's own key instead)"
        )
    raise HostKeyError(
        f"host key of {spec.alias} ({name}) is unknown (not in {files}){extra}; "
        f"the box offers {offered}",
        hint=(
            "if that fingerprint is the box's (check your provider's console), accept it with "
            f"`{trust_command(spec, key)}`"
        ),
    )


def trust_command(spec: HostSpec, key: paramiko.PKey | None = None) -> str:
    words = ["rentcheck", "trust", spec.alias]
    if spec.config_file:
        words += ["--ssh-config", spec.config_file]
    if key is not None:
        words += ["--fingerprint", fingerprint(key)]
    return shlex.join(words)


def record_trust(spec: HostSpec, key: paramiko.PKey) -> str:
    """Append ``key`` to the user's known_hosts with a comment recording who added it and when.

    Appending (not rewriting) keeps every existing line of the user's file as it was.
    """
    files = [f for f in spec.user_known_hosts if f != "none"]
    if not files:
        raise HostKeyError(
            f"UserKnownHostsFile is none for {spec.alias}: there is no file to record the key in",
            hint="set UserKnownHostsFile for this host in your ssh_config",
        )
    path = files[0]
    name = spec.known_hosts_name
    if spec.hash_known_hosts:
        salt = os.urandom(20)
        digest = hmac.new(salt, name.lower().encode(), hashlib.sha1).digest()
        name = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
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

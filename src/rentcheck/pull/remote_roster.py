"""The roster of a result directory read on the box: built, stat'ed or re-hashed over one exec.

The box runs the stdlib-only ``manifest_builder`` module sent on stdin (``python3 -I -S -``):
nothing is installed there and nothing is left behind, unless ``write=True`` asks for
``ROOT/PULL_MANIFEST.json`` on the box too. Three requests, each one round trip:

* ``build_roster``: the manifest's exact bytes (what ``rentcheck manifest build`` writes), and
  whether the box has ``rsync``;
* ``stat_roster``: size and ``mtime_ns`` of every file under ROOT (the builder's walk and
  policy, no hashing): how teardown and the changed-during-pull check re-read the box cheaply;
* ``hash_files``: roster entries (SHA-256) for the named files only.

The answer is one JSON line, then the payload compressed with zlib (a roster of hex digests
halves). The transport bounds a command's output, so a compressed payload over
``INLINE_MAX`` is spooled to a temp file on the box, read back in pieces and deleted there:
a million-file roster is not refused for its size.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import shlex
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rentcheck.errors import RemoteError, UsageError

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = [
    "BoxFile",
    "BoxRoster",
    "BoxTree",
    "Hashed",
    "build_roster",
    "hash_files",
    "remote_program",
    "stat_roster",
]

DEFAULT_TIMEOUT = 900.0  # hashing a few hundred GB of checkpoints takes minutes
# A compressed answer larger than this is spooled to a file on the box and read in pieces
# (SPOOL_PIECE each): no roster is too big for the transport's bound on one command's output.
INLINE_MAX = 4 << 20

# Runs on the box (Python 3.7+, stdlib only): the builder's source is exec'd as a module of
# its own name, so its `if __name__ == "__main__"` stays off.
_DRIVER = r"""
import json, os, shutil, sys, zlib
_ns = {"__name__": "rentcheck_manifest_builder"}
exec(compile(BUILDER_SOURCE, "manifest_builder.py", "exec"), _ns)
b = type("builder", (), _ns)
req = json.loads(REQUEST)
root = req["root"]
out = sys.stdout.buffer

def answer(head, payload=b""):
    data = zlib.compress(payload, 1)
    if len(data) > req.get("inline_max", 4 << 20):
        # Too big for one command's output: spooled to a file the client reads in pieces.
        import tempfile
        fd, spool = tempfile.mkstemp(prefix="rentcheck-answer-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        head = dict(head, spool=spool, spool_bytes=len(data))
        data = b""
    out.write(json.dumps(head).encode() + b"\n" + data)
    out.flush()

try:
    if not os.path.isdir(root):
        raise b.BuildError("%r is not a directory on the box" % root,
                           "pass the run's result directory as HOST:REMOTE_ROOT")
    head = {"ok": True, "root": os.path.realpath(root),
            "rsync": shutil.which("rsync") is not None,
            "python": "%d.%d" % sys.version_info[:2]}
    mode = req["mode"]
    if mode == "roster":
        if req.get("write"):
            target = os.path.join(root, b.MANIFEST_NAME)
            b.write_manifest(root, target, req.get("run_id"), None, False)
            with open(target, "rb") as f:
                data = f.read()
        else:
            data = b.dumps(b.build_manifest(root, req.get("run_id"), None, False))
        answer(head, data)
    elif mode == "stat":
        files, left = [], []
        for rel, path in b.iter_tree(root):
            if path is None:
                st = os.lstat(os.path.join(root, rel))
                left.append([rel, st.st_size, st.st_mtime_ns])
            else:
                st = os.stat(path)
                files.append([rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        answer(head, json.dumps({"files": files, "leftovers": left}).encode())
    else:
        found, missing, unstable, unreadable = [], [], [], {}
        for rel in req["paths"]:
            path = os.path.join(root, rel)
            if not os.path.isfile(path):
                missing.append(rel)
                continue
            try:
                found.append(b.hash_file(rel, os.path.realpath(path), False))
            except b.BuildError:  # it changed while it was read: still being written
                unstable.append(rel)
            except FileNotFoundError:  # gone between the check and the open
                missing.append(rel)
            except OSError as exc:  # unreadable: the caller must not count it unchanged
                unreadable[rel] = str(exc)
        doc = {"files": found, "missing": missing, "unstable": unstable,
               "unreadable": unreadable}
        answer(head, json.dumps(doc).encode())
except b.BuildError as exc:
    answer({"ok": False, "error": exc.message, "hint": exc.hint})
    sys.exit(2)
except OSError as exc:
    answer({"ok": False, "error": str(exc), "hint": "check REMOTE_ROOT and its permissions"})
    sys.exit(2)
"""

_SHELL = (
    "command -v python3 >/dev/null 2>&1 || "
    "{ echo 'rentcheck: the box has no python3' >&2; exit 127; }; exec python3 -I -S -"
)


def remote_program(request: Mapping[str, Any]) -> bytes:
    """The program sent on stdin: the builder's source, the request, the driver."""
    from rentcheck.payload import manifest_builder

    with open(manifest_builder.__file__, encoding="utf-8") as handle:
        source = handle.read()
    return (
        f"BUILDER_SOURCE = {source!r}\nREQUEST = {json.dumps(dict(request))!r}\n{_DRIVER}"
    ).encode()


# Reads COUNT bytes at OFFSET of the spooled answer; with COUNT 0 deletes it.
_SPOOL_READER = (
    "import os, sys\n"
    "path, offset, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "if not count:\n"
    "    os.unlink(path); sys.exit(0)\n"
    "with open(path, 'rb') as f:\n"
    "    f.seek(offset); sys.stdout.buffer.write(f.read(count))\n"
)
SPOOL_PIECE = 8 << 20  # under the transport's bound on one command's output


def _fetch_spool(box: Box, head: Mapping[str, Any], timeout: float, what: str) -> bytes:
    """The answer the box spooled to a file (too big for one command's output), read in
    pieces, then deleted there."""
    spool, size = str(head.get("spool")), head.get("spool_bytes")
    name = posixpath.basename(spool)
    if not name.startswith("rentcheck-answer-") or not isinstance(size, int) or size < 0:
        raise RemoteError(f"{what} on {box.name}: a malformed spooled answer ({spool!r})")
    quoted = shlex.quote(spool)
    pieces = []
    try:
        for offset in range(0, size, SPOOL_PIECE):
            count = min(SPOOL_PIECE, size - offset)
            script = f"exec python3 -I -S -c {shlex.quote(_SPOOL_READER)} {quoted} {offset} {count}"
            result = box.run(script, timeout=timeout, label=what)
            if not result.ok or len(result.stdout) != count:
                raise RemoteError(
                    f"{what} on {box.name}: reading the spooled answer failed "
                    f"(exit {result.exit_status}): {result.stderr_tail()}"
                )
            pieces.append(result.stdout)
    finally:
        box.run(
            f"exec python3 -I -S -c {shlex.quote(_SPOOL_READER)} {quoted} 0 0",
            timeout=60.0,
            label=f"{what} (cleanup)",
        )
    return b"".join(pieces)


def _login_script_output(stdout: bytes, host: str, what: str) -> None:
    """RemoteError naming text the box printed before the answer, as audit names it: a
    login script (motd, an echo in ~/.bashrc) printing for non-interactive commands."""
    at = stdout.find(b'{"ok": ')
    if at <= 0:
        return
    head = stdout[:at].decode("utf-8", "replace")
    raise RemoteError(
        f"{what} on {host}: the box printed {head[:200]!r} before the answer, so it cannot "
        "be trusted as the roster",
        hint="a login script that prints text (motd, an echo in ~/.bashrc or ~/.profile) "
        "does this: print only in interactive shells (case $- in *i*) ... esac)",
    )


def _ask(
    box: Box, request: Mapping[str, Any], timeout: float, what: str
) -> tuple[dict[str, Any], bytes]:
    request = {**request, "inline_max": INLINE_MAX}
    result = box.run(_SHELL, stdin=remote_program(request), timeout=timeout, label=what)
    line, sep, rest = result.stdout.partition(b"\n")
    try:
        head = json.loads(line) if sep else None
    except ValueError:
        head = None
    if not isinstance(head, dict):
        _login_script_output(result.stdout, box.name, what)
        if result.exit_status == 127:
            raise UsageError(
                f"{box.name} has no python3: the roster is built there with it",
                hint="install python3 on the box (any 3.7+), or build the manifest elsewhere "
                "and pull with rsync by hand",
            )
        raise RemoteError(
            f"{what} on {box.name} gave no answer (exit {result.exit_status}): "
            f"{result.stderr_tail()}",
            hint="run `python3 -V` on the box; the roster needs Python 3.7 or later",
        )
    if not head.get("ok"):
        raise UsageError(
            f"{what} on {box.name}: {head.get('error')}", hint=str(head.get("hint") or "")
        )
    if "spool" in head:
        rest = _fetch_spool(box, head, timeout, what)
    try:
        return head, zlib.decompress(rest)
    except zlib.error as exc:
        raise RemoteError(f"{what} on {box.name}: damaged answer ({exc})") from None


@dataclass(frozen=True)
class BoxRoster:
    """The manifest's bytes as the box built them, and what the box offers for the transfer."""

    data: bytes
    root: str  # the real path on the box
    rsync: bool
    python: str


def build_roster(
    box: Box,
    remote_root: str,
    *,
    run_id: str | None = None,
    write: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> BoxRoster:
    request = {"mode": "roster", "root": remote_root, "run_id": run_id, "write": write}
    head, data = _ask(box, request, timeout, "building the roster")
    return BoxRoster(data, str(head["root"]), bool(head["rsync"]), str(head["python"]))


@dataclass(frozen=True)
class BoxFile:
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # 0: not known (a leftover); ctime cannot be set back by utime
    ino: int = 0


@dataclass(frozen=True)
class BoxTree:
    """Every file under the root on the box now (sizes, mtimes), and unfinished writes."""

    files: dict[str, BoxFile]
    leftovers: dict[str, BoxFile]
    root: str


def stat_roster(box: Box, remote_root: str, *, timeout: float = DEFAULT_TIMEOUT) -> BoxTree:
    head, data = _ask(box, {"mode": "stat", "root": remote_root}, timeout, "re-reading the box")
    doc = json.loads(data)
    files = {str(row[0]): BoxFile(*(int(n) for n in row[1:5])) for row in doc["files"]}
    left = {str(p): BoxFile(int(s), int(m)) for p, s, m in doc["leftovers"]}
    return BoxTree(files, left, str(head["root"]))


@dataclass(frozen=True)
class Hashed:
    """Roster entries by path (hashed on the box now), paths not there, paths that changed
    while they were read (still being written), paths that could not be read (and why)."""

    entries: dict[str, dict[str, Any]]
    missing: frozenset[str] = frozenset()
    unstable: frozenset[str] = frozenset()
    unreadable: Mapping[str, str] = dataclasses.field(default_factory=dict)


def hash_files(
    box: Box, remote_root: str, paths: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT
) -> Hashed:
    wanted = list(paths)
    if not wanted:
        return Hashed({})
    request = {"mode": "hash", "root": remote_root, "paths": wanted}
    _, data = _ask(box, request, timeout, "hashing on the box")
    doc = json.loads(data)
    return Hashed(
        {str(e["path"]): e for e in doc["files"]},
        frozenset(str(p) for p in doc["missing"]),
        frozenset(str(p) for p in doc["unstable"]),
        {str(p): str(why) for p, why in (doc.get("unreadable") or {}).items()},
    )


def remote_path(root: str, rel: str) -> str:
    """A roster path under the box's root (roster paths are validated relative POSIX paths)."""
    return posixpath.join(root, rel) if root else rel

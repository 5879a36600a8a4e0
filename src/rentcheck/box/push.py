"""``rentcheck push``: install a file on a box by temp file + rename, never in place.

A running bash keeps reading the inode it opened, so a rename leaves it on its old copy while
new runs get the new file. Writing in place would splice the new text under its read offset
(RC401); push never does that, and refuses rather than fall back to it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shlex
import stat
from dataclasses import dataclass, field
from typing import Any

from rentcheck.atomic import write_atomic
from rentcheck.box.facts import gather_facts
from rentcheck.box.mutation import executors_of
from rentcheck.box.transport import Box
from rentcheck.errors import GateError, RemoteError

__all__ = ["PushResult", "push_file"]

# Runs on the box with the new content on stdin: temp file beside the target, fsync where
# `sync FILE` exists, then one rename. Exit 3: no temp file possible; 4: the target is a link.
PUSH_SCRIPT = r"""
set -e
case $dst in */*) dir=${dst%/*}; dir=${dir:-/} ;; *) dir=. ;; esac
if [ -L "$dst" ]; then echo "rentcheck-push: $dst is a symlink" >&2; exit 4; fi
if [ ! -d "$dir" ]; then echo "rentcheck-push: no directory $dir" >&2; exit 3; fi
tmp=$(mktemp "$dir/.rentcheck-push.XXXXXX" 2>/dev/null) || {
  echo "rentcheck-push: cannot create a temporary file in $dir" >&2; exit 3; }
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
chmod "$mode" "$tmp"
sync "$tmp" 2>/dev/null || true
mv -f "$tmp" "$dst"
trap - EXIT
if command -v sha256sum >/dev/null 2>&1; then sha256sum "$dst"; else echo "- $dst"; fi
"""


@dataclass
class PushResult:
    host: str
    source: str
    target: str
    size: int
    sha256: str
    verified: bool
    running: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        text = f"pushed {self.source} -> {self.host}:{self.target} ({self.size} bytes, by rename"
        text += ", sha256 verified)" if self.verified else ")"
        if self.running:
            procs = ", ".join(f"pid {p['pid']} ({p['command']})" for p in self.running)
            text += f"; still running their old copy: {procs}"
        return text


def _locate(box: Box, target: str, timeout: float) -> tuple[str, list[dict[str, Any]]]:
    """The absolute target on the box, and the processes executing it now (one probe exec)."""
    directory = os.path.dirname(target) or "."
    request = {"paths": {}, "script_roots": [directory], "sections": ["host", "live_scripts"]}
    try:
        facts = gather_facts(box, request, timeout)
    except RemoteError:
        return target, []  # knowing who runs it is a courtesy; the rename is safe either way
    home = (facts.get("host") or {}).get("home") or "/"
    if target == "~" or target.startswith("~/"):
        target = home + target[1:]
    # A relative remote path is relative to the login directory, as with scp.
    target = posixpath.normpath(posixpath.join(home, target))
    running = executors_of(facts, target)
    return target, [{"pid": s.get("pid"), "command": s.get("command")} for s in running]


def push_file(box: Box, source: str, target: str, *, timeout: float = 120.0) -> PushResult:
    """Copy ``source`` (local) to ``target`` on ``box`` by rename; raises GateError if it cannot."""
    with open(source, "rb") as handle:
        data = handle.read()
    mode = stat.S_IMODE(os.stat(source).st_mode)
    digest = hashlib.sha256(data).hexdigest()
    if box.name == "local":
        target = os.path.abspath(os.path.expanduser(target))
    target, running = _locate(box, target, timeout)
    if box.name == "local":
        if os.path.islink(target):
            raise GateError(
                f"{target} is a symlink", hint=f"push to its target {os.path.realpath(target)}"
            )
        try:
            write_atomic(target, data, mode)
        except OSError as exc:
            raise GateError(
                f"cannot replace {target} by rename: {exc}",
                hint="push into an existing, writable directory",
            ) from exc
        return PushResult("local", source, target, len(data), digest, True, running)
    script = f"dst={shlex.quote(target)}; mode={mode:o}\n{PUSH_SCRIPT}"
    result = box.run(script, stdin=data, timeout=timeout, label=f"the push of {target}")
    if result.exit_status in (3, 4):
        who = (
            "; live processes run it: " + ", ".join(str(p["pid"]) for p in running)
            if running
            else ""
        )
        raise GateError(
            f"cannot replace {box.name}:{target} by rename: {result.stderr_tail()}{who}",
            hint="push into a writable directory (rentcheck never overwrites a file in place)",
        )
    if not result.ok:
        raise RemoteError(f"push to {box.name}:{target} failed: {result.stderr_tail()}")
    remote_digest = result.stdout.decode("utf-8", "replace").split(" ")[0].strip()
    if remote_digest not in ("-", digest):
        raise RemoteError(
            f"{box.name}:{target} has sha256 {remote_digest} after the push, expected {digest}",
            hint="the copy was damaged in transit; push again",
        )
    return PushResult(box.name, source, target, len(data), digest, remote_digest == digest, running)

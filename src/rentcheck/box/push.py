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
from rentcheck.box.transport import Box, LocalBox
from rentcheck.errors import GateError, RemoteError

__all__ = ["PushResult", "push_file"]

# Runs on the box with the new content on stdin. The target is resolved there (`~`, relative
# paths: the login directory), never guessed here. The upload goes to a temp file beside the
# target and is installed only after its size and sha256 match, by rename(2), which replaces a
# symlink planted meanwhile instead of following it (python3's os.rename, else `mv -T`). Any
# interruption (EOF early, a signal, the timeout) removes the temp file and leaves the target.
# Exit 3: no temp file possible; 4: the target is a symlink; 5: a directory; 6: the upload is
# incomplete or damaged; 7: no rename that does not follow links.
PUSH_SCRIPT = r"""
set -e
case $dst in
  "~") dst=${HOME:?} ;;
  "~/"*) dst=${HOME:?}/${dst#"~/"} ;;
  /*) ;;
  *) dst=$PWD/$dst ;;
esac
dir=${dst%/*}; dir=${dir:-/}
if [ -L "$dst" ]; then echo "rentcheck-push: $dst is a symlink" >&2; exit 4; fi
if [ -d "$dst" ]; then echo "rentcheck-push: $dst is a directory" >&2; exit 5; fi
if [ ! -d "$dir" ]; then echo "rentcheck-push: no directory $dir" >&2; exit 3; fi
tmp=$(mktemp "$dir/.rentcheck-push.XXXXXX" 2>/dev/null) || {
  echo "rentcheck-push: cannot create a temporary file in $dir" >&2; exit 3; }
trap 'rm -f "$tmp"' EXIT
trap 'exit 1' HUP INT TERM PIPE
cat > "$tmp"
got=$(wc -c < "$tmp" | tr -d ' ')
if [ "$got" != "$size" ]; then
  echo "rentcheck-push: received $got of $size bytes; $dst left as it was" >&2; exit 6; fi
if command -v sha256sum >/dev/null 2>&1; then sum=$(sha256sum < "$tmp"); sum=${sum%% *}
elif command -v python3 >/dev/null 2>&1; then
  sum=$(python3 -c 'import hashlib,sys
print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())' < "$tmp")
else sum=-; fi
if [ "$sum" != - ] && [ "$sum" != "$want" ]; then
  echo "rentcheck-push: sha256 $sum, expected $want; $dst left as it was" >&2; exit 6; fi
chmod "$mode" "$tmp"
sync "$tmp" 2>/dev/null || true
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import os,sys; os.rename(sys.argv[1], sys.argv[2])' "$tmp" "$dst" || exit 7
else
  mv -T -f "$tmp" "$dst" 2>/dev/null || {
    echo "rentcheck-push: no python3 and no mv -T: cannot rename without following links" >&2
    exit 7; }
fi
trap - EXIT
echo "rentcheck-push: $sum $dst"
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
        text += ", sha256 verified)" if self.verified else ", size verified: no sha256 tool)"
        if self.running:
            procs = ", ".join(f"pid {p['pid']} ({p['command']})" for p in self.running)
            text += f"; still running their old copy: {procs}"
        return text


def _running(box: Box, target: str, timeout: float) -> list[dict[str, Any]]:
    """The processes executing ``target`` now (one probe exec); [] when that cannot be known."""
    home_relative = not target.startswith("/")
    directory = posixpath.dirname(target) or "."
    request = {
        "paths": {},
        "script_roots": [directory],
        "sections": ["host", "live_scripts"],
        "budget_s": max(1.0, min(timeout, 30.0) * 0.8),
    }
    try:
        facts = gather_facts(box, request, min(timeout, 30.0))
    except RemoteError:
        return []  # knowing who runs it is a courtesy; the rename is safe either way
    if home_relative:
        home = (facts.get("host") or {}).get("home")
        if not home:  # the sh probe reports no home: do not guess one
            return []
        rest = target[2:] if target.startswith("~/") else "" if target == "~" else target
        target = posixpath.normpath(posixpath.join(home, rest))
    running = executors_of(facts, posixpath.normpath(target))
    return [{"pid": s.get("pid"), "command": s.get("command")} for s in running]


def _push_local(source: str, target: str, data: bytes, mode: int, digest: str) -> PushResult:
    target = os.path.abspath(os.path.expanduser(target))
    running = _running(LocalBox(), target, 30.0)
    if os.path.islink(target):
        raise GateError(
            f"{target} is a symlink", hint=f"push to its target {os.path.realpath(target)}"
        )
    if os.path.isdir(target):
        raise GateError(f"{target} is a directory", hint="name the file to install, not its dir")
    try:
        write_atomic(target, data, mode)
    except OSError as exc:
        raise GateError(
            f"cannot replace {target} by rename: {exc}",
            hint="push into an existing, writable directory",
        ) from exc
    return PushResult("local", source, target, len(data), digest, True, running)


def push_file(box: Box, source: str, target: str, *, timeout: float = 120.0) -> PushResult:
    """Copy ``source`` (local) to ``target`` on ``box`` by rename; raises GateError if it cannot."""
    with open(source, "rb") as handle:
        data = handle.read()
    mode = stat.S_IMODE(os.stat(source).st_mode)
    digest = hashlib.sha256(data).hexdigest()
    if box.name == "local":
        return _push_local(source, target, data, mode, digest)
    running = _running(box, target, timeout)
    script = (
        f"dst={shlex.quote(target)}; mode={mode:o}; size={len(data)}; want={digest}\n{PUSH_SCRIPT}"
    )
    result = box.run(script, stdin=data, timeout=timeout, label=f"the push of {target}")
    if result.exit_status in (3, 4, 5, 7):
        who = ", ".join(str(p["pid"]) for p in running)
        raise GateError(
            f"cannot replace {box.name}:{target} by rename: {result.stderr_tail()}"
            + (f"; live processes run it: {who}" if who else ""),
            hint="push to a file path in a writable directory (rentcheck never overwrites a "
            "file in place)",
        )
    if result.exit_status == 6:
        raise RemoteError(
            f"push to {box.name}:{target} was not installed: {result.stderr_tail()}",
            hint="the upload was cut short or damaged in transit; push again",
        )
    if not result.ok:
        raise RemoteError(
            f"push to {box.name}:{target} failed (exit {result.exit_status}): "
            f"{result.stderr_tail()}"
        )
    last = result.stdout.decode("utf-8", "replace").strip().splitlines()[-1:]
    words = last[0].split(" ", 2) if last else []
    if len(words) != 3 or words[0] != "rentcheck-push:":
        raise RemoteError(f"push to {box.name}:{target} printed no confirmation")
    remote_digest, installed = words[1], posixpath.normpath(words[2])
    return PushResult(
        box.name, source, installed, len(data), digest, remote_digest == digest, running
    )

"""Gather a box's facts in one exec round trip: the probe travels on stdin, JSON comes back.

The stdin document is a sh/Python polyglot: ``sh`` sees ``''':'`` as the no-op ``:`` and runs
the POSIX fallback probe up to its ``exit``; Python sees a string literal and runs the real
probe after it. The command picks ``python3`` when the box has it, ``sh -s`` otherwise.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from typing import TYPE_CHECKING, Any

from rentcheck.box.answer import parse_answer
from rentcheck.errors import RemoteError

if TYPE_CHECKING:
    from rentcheck.box.settings import AuditSettings
    from rentcheck.box.transport import Box

__all__ = ["gather_facts", "probe_request", "probe_script", "probe_stream"]

# Fewer facts, no python: space and inodes of each path (df), tools, nproc, /dev/shm.
SH_PROBE = r"""
set +e
q() {  # a JSON string; control characters are dropped (JSON forbids them raw)
  printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037')"
}
space() {
  b=$(df -Pk "$1" 2>/dev/null | awk 'NR==2 {printf "%.0f %.0f ", $2*1024, $4*1024; print $6}')
  i=$(df -Pi "$1" 2>/dev/null | awk 'NR==2 {printf "%.0f %.0f", $2, $4}')
  set -- $b $i
  if [ -z "$1" ]; then printf 'null'; return; fi
  printf '{"bytes_total":%s,"bytes_free":%s,"inodes_total":%s,"inodes_free":%s}' \
    "$1" "$2" "${4:-0}" "${5:-0}"
}
mountpoint() { df -Pk "$1" 2>/dev/null | awk 'NR==2 {print $6}'; }
place() {
  m=$1
  while [ ! -e "$m" ] && [ "$m" != / ]; do m=$(dirname "$m"); done
  e=false; [ -e "$1" ] && e=true
  l=false; [ -L "$1" ] && l=true
  printf '{"path":%s,"realpath":%s,"exists":%s,"is_symlink":%s,"measured_at":%s,"space":' \
    "$(q "$1")" "$(q "$1")" "$e" "$l" "$(q "$m")"
  space "$m"
  printf ',"mount":{"mount_point":%s}}' "$(q "$(mountpoint "$m")")"
}
printf '{"schema":"rentcheck/box-facts/v1","probe":{"kind":"sh"},'
printf '"host":{"hostname":%s,"kernel":%s},' "$(q "$(uname -n)")" "$(q "$(uname -r)")"
printf '"root":'; place /
printf ',"paths":{'; sep=
for arg in "$@"; do printf '%s%s:' "$sep" "$(q "${arg%%=*}")"; place "${arg#*=}"; sep=,; done
printf '},"tools":{'; sep=
for t in tmux screen setsid nohup rsync timeout; do
  p=$(command -v "$t" 2>/dev/null)
  if [ -n "$p" ]; then p=$(q "$p"); else p=null; fi
  printf '%s"%s":%s' "$sep" "$t" "$p"
  sep=,
done
n=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)
printf '},"cpu":{"nproc":%s,"quota_cores":null},"shm":' "${n:-null}"
if [ -d /dev/shm ]; then space /dev/shm; else printf 'null'; fi
why="no python3 on the box: the sh probe read only disks, tools and nproc"
printf ',"unreadable":[{"fact":"python3","why":"%s"}]}\n' "$why"
"""


@functools.lru_cache(maxsize=1)
def probe_stream() -> bytes:
    """The polyglot stdin document: sh fallback, then the Python probe."""
    from rentcheck.payload import PAYLOAD_DIR

    with open(os.path.join(PAYLOAD_DIR, "probe.py"), encoding="utf-8") as handle:
        program = handle.read()
    if "'''" in SH_PROBE:  # pragma: no cover - guards the polyglot against a future edit
        raise AssertionError("the sh probe must not contain three single quotes")
    return f"''':'\n{SH_PROBE}\nexit 0\n'''\n{program}".encode()


def probe_request(settings: AuditSettings, host: str) -> dict[str, Any]:
    return {
        "paths": dict(settings.paths),
        "caches": list(settings.caches),
        "walk_seconds": settings.walk_seconds,
        "gpu": settings.gpu_expected(host),
        "torch_python": settings.python if settings.probe_torch(host) else None,
        "torch_timeout": max(1.0, settings.timeout / 2),
        # Every fact must be in before the server-side timeout kills the probe: a hung tool
        # costs its own fact, never the whole answer.
        "budget_s": max(1.0, settings.timeout * 0.8),
        "script_roots": list(settings.script_roots),
    }


def probe_script(request: dict[str, Any], python: str = "python3") -> str:
    """The shell text of the one exec request (run under the transport's server-side timeout).

    The system interpreter is preferred: the probe needs only the standard library, and a
    version-manager shim on PATH (pyenv) costs a second bash start per audit.
    """
    payload = shlex.quote(json.dumps(request, separators=(",", ":"), sort_keys=True))
    args = " ".join(shlex.quote(f"{role}={path}") for role, path in request["paths"].items())
    py = shlex.quote(python)
    system = f"/usr/bin/{py}" if "/" not in python else py
    return (
        f"if [ -x {system} ]; then exec {system} -I -B - {payload}; fi; "
        f"if command -v {py} >/dev/null 2>&1; then exec {py} -I -B - {payload}; fi; "
        f"exec sh -s -- {args}"
    )


def gather_facts(
    box: Box, request: dict[str, Any], timeout: float, python: str = "python3"
) -> dict[str, Any]:
    """Run the probe on ``box`` (one exec) and return its facts; RemoteError if it broke."""
    script = probe_script(request, python)
    result = box.run(script, stdin=probe_stream(), timeout=timeout, label="the probe")
    if not result.ok:
        raise RemoteError(
            f"the probe failed on {box.name} (exit {result.exit_status}): {result.stderr_tail()}",
            hint="run with --debug and report it, with the box's OS and python3 version",
        )
    facts = parse_answer(result.stdout, box.name)
    if not isinstance(facts.get("probe"), dict):
        facts["probe"] = {}
    facts["probe"]["round_trip_s"] = result.seconds
    return facts

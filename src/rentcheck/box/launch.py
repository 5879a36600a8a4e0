"""``rentcheck launch``: start a command on a box, detached the safe way, in one exec.

The box gets a private directory ``~/.rentcheck/jobs/<session>/`` (mode 700) holding ``env``
(the named variables, 0600, sent over stdin, never in argv), ``job`` (what was launched),
``wrapper`` (a small sh script) and ``status``. The wrapper runs in its own session (a tmux
session, else ``setsid nohup``), empties its environment (a tmux server's environment is
whatever it was started with) and sources ``env``: the login's HOME, USER, PATH, SHELL, LANG
and the named variables, exports ``PYTHONUNBUFFERED=1``, records its
pid, process group, session and start ticks in ``status``, runs the command with stdin from
/dev/null and stdout+stderr appended to the log, and at exit adds the exit status. ``status``
is written by temp file + rename, so a reader never sees half of it.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rentcheck.box.transport import Box
from rentcheck.errors import GateError, RemoteError, UsageError

__all__ = ["JOBS_DIR", "LaunchPlan", "Launched", "job_dir", "start_job"]

JOBS_DIR = "~/.rentcheck/jobs"
SESSION_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The wrapper: $1 is the job directory. `status` carries `job` plus the numbers below.
WRAPPER = r"""#!/bin/sh
# Written by rentcheck launch: runs the job, records pid, group, start and exit status.
dir=$1
# A clean environment: the login's basics and the named variables (env), nothing else.
if [ -z "${RENTCHECK_CLEAN:-}" ]; then exec env -i RENTCHECK_CLEAN=1 /bin/sh "$0" "$@"; fi
unset RENTCHECK_CLEAN
. "$dir/env"
export PYTHONUNBUFFERED=1
s=$(cat /proc/$$/stat); s=${s##*) }; set -- $s
pgid=$3; sid=$4; ticks=${20}
started=$(date +%s)
note() {
  { cat "$dir/job"
    printf 'pid=%s\npgid=%s\nsid=%s\nstart_ticks=%s\nstarted_at=%s\n' \
      $$ "$pgid" "$sid" "$ticks" "$started"
    for line in "$@"; do printf '%s\n' "$line"; done
  } > "$dir/status.tmp" && mv -f "$dir/status.tmp" "$dir/status"
}
note
log=$(sed -n 's/^log=//p' "$dir/job")
cwd=$(sed -n 's/^cwd=//p' "$dir/job")
if ! cd "$cwd"; then
  note "exit_status=127" "ended_at=$(date +%s)"; exit 127
fi
trap '' HUP
__COMMAND__ </dev/null >>"$log" 2>&1
rc=$?
note "exit_status=$rc" "ended_at=$(date +%s)"
exit $rc
"""

# Runs on the box with the env file on stdin. Exit 3: the session is still running;
# 4: no tmux and no setsid; 5: the wrapper did not start.
LAUNCH_SCRIPT = r"""
set -e
expand() {
  case $1 in
    "~") printf '%s' "$HOME" ;;
    "~/"*) printf '%s/%s' "$HOME" "${1#"~/"}" ;;
    /*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$base" "$1" ;;
  esac
}
ticks() {
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }; set -- $s; printf '%s' "${20}"
}
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
BASE_ENV="HOME USER LOGNAME PATH SHELL LANG LC_ALL TZ TMPDIR"
base=$HOME
dir=$(expand "$dir"); cwd=$(expand "$cwd"); base=$cwd; log=$(expand "$log")
if [ -n "$ckpt" ]; then ckpt=$(expand "$ckpt"); fi
umask 077
mkdir -p "$dir"; chmod 700 "$dir"
if [ -f "$dir/status" ] && ! grep -q '^exit_status=' "$dir/status"; then
  pid=$(sed -n 's/^pid=//p' "$dir/status"); start=$(sed -n 's/^start_ticks=//p' "$dir/status")
  if [ -n "$pid" ] && [ "$(ticks "$pid" || true)" = "$start" ]; then
    echo "rentcheck-launch: session $session is still running as pid $pid" >&2; exit 3
  fi
fi
use=
if [ "$detach" != setsid ] && command -v tmux >/dev/null 2>&1; then use=tmux
elif [ "$detach" != tmux ] && command -v setsid >/dev/null 2>&1; then use=setsid
else echo "rentcheck-launch: neither tmux nor setsid (detach=$detach) on the box" >&2; exit 4
fi
if [ "$use" = tmux ] && tmux has-session -t "=$session" 2>/dev/null; then
  echo "rentcheck-launch: a tmux session $session already exists" >&2; exit 3
fi
for v in $BASE_ENV; do
  eval "isset=\${$v+x}"
  if [ -n "$isset" ]; then eval "val=\$$v"; printf 'export %s=%s\n' "$v" "$(q "$val")"; fi
done > "$dir/env.tmp"
cat >> "$dir/env.tmp"; mv -f "$dir/env.tmp" "$dir/env"
mkdir -p "$(dirname "$log")"
: >> "$log"
log_start=$(wc -c < "$log" | tr -d ' ')
boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true)
{ printf 'session=%s\nlog=%s\ncwd=%s\nckpt_dir=%s\n' "$session" "$log" "$cwd" "$ckpt"
  printf 'command_sha256=%s\nlog_start=%s\nboot_id=%s\ndetach=%s\n' \
    "$digest" "$log_start" "$boot" "$use"; } > "$dir/job.tmp"
mv -f "$dir/job.tmp" "$dir/job"
printf '%s' "$wrapper" > "$dir/wrapper.tmp"; mv -f "$dir/wrapper.tmp" "$dir/wrapper"
rm -f "$dir/status"
if [ "$use" = tmux ]; then
  tmux new-session -d -s "$session" "exec sh $(q "$dir/wrapper") $(q "$dir")"
else
  setsid nohup sh "$dir/wrapper" "$dir" </dev/null >/dev/null 2>&1 &
fi
i=0
while [ ! -f "$dir/status" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if [ ! -f "$dir/status" ]; then echo "rentcheck-launch: the wrapper did not start" >&2; exit 5; fi
echo "rentcheck-launch: started"
cat "$dir/status"
"""


def job_dir(session: str) -> str:
    return f"{JOBS_DIR}/{session}"


@dataclass(frozen=True)
class LaunchPlan:
    """What to start where: the command's argv is run exactly (quoted, never re-split)."""

    session: str
    argv: tuple[str, ...]
    log: str | None = None  # a box path (``~`` and relative to cwd allowed)
    cwd: str = "~"
    ckpt_dir: str | None = None
    env_names: tuple[str, ...] = ()
    detach: str = "auto"  # auto (tmux, else setsid), tmux, setsid

    def __post_init__(self) -> None:
        if not SESSION_RE.match(self.session):
            raise UsageError(
                f"--session {self.session!r}: letters, digits, '_' and '-' only",
                hint="e.g. --session train-1 (tmux refuses '.' and ':')",
            )
        if not self.argv:
            raise UsageError("nothing to launch", hint="rentcheck launch --host H -- CMD ARGS")
        for name, value in (("--log", self.log), ("--cwd", self.cwd), ("--ckpt", self.ckpt_dir)):
            if value is not None and ("\n" in value or "\0" in value):
                raise UsageError(f"{name} contains a line break", hint="use a plain path")
        for name in self.env_names:
            if not ENV_NAME_RE.match(name):
                raise UsageError(
                    f"--env {name!r} is not a variable name", hint="e.g. --env HF_TOKEN"
                )

    @property
    def command_text(self) -> str:
        return shlex.join(self.argv)

    @property
    def digest(self) -> str:
        return hashlib.sha256("\0".join(self.argv).encode()).hexdigest()

    @property
    def log_path(self) -> str:
        return self.log or f"{job_dir(self.session)}/log"


@dataclass(frozen=True)
class Launched:
    """The wrapper's first status: where and what runs now."""

    host: str
    session: str
    pid: int
    pgid: int
    start_ticks: int
    started_at: int
    log: str
    log_start: int
    cwd: str
    ckpt_dir: str | None
    command_sha256: str
    detach: str
    boot_id: str = ""  # the box's boot when it started: a pid from another boot is not it

    def evidence(self) -> dict[str, str]:
        """The ledger's evidence of this launch (strings, as the ledger keeps them)."""
        return {
            "session": self.session,
            "pid": str(self.pid),
            "pgid": str(self.pgid),
            "start_ticks": str(self.start_ticks),
            "started_at": str(self.started_at),
            "command_sha256": self.command_sha256,
            "log": self.log,
            "checkpoint_dir": self.ckpt_dir or "",
            "detach": self.detach,
            "boot_id": self.boot_id,
        }


def env_file(names: Sequence[str], environ: Mapping[str, str]) -> bytes:
    """``export NAME='value'`` lines for the named variables; a UsageError for a missing one."""
    missing = [name for name in names if name not in environ]
    if missing:
        raise UsageError(
            f"--env {', '.join(missing)}: not set here",
            hint="export it in this shell first (its value travels over stdin, never argv)",
        )
    return "".join(f"export {n}={shlex.quote(environ[n])}\n" for n in names).encode()


def parse_status(text: str) -> dict[str, str]:
    status: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            status[key.strip()] = value.strip()
    return status


def start_job(
    box: Box, plan: LaunchPlan, environ: Mapping[str, str], *, timeout: float = 60.0
) -> Launched:
    """Start ``plan`` on ``box`` (one exec); GateError when the session still runs."""
    wrapper = WRAPPER.replace("__COMMAND__", plan.command_text)
    assigns = {
        "session": plan.session,
        "dir": job_dir(plan.session),
        "cwd": plan.cwd,
        "log": plan.log_path,
        "ckpt": plan.ckpt_dir or "",
        "digest": plan.digest,
        "detach": plan.detach,
        "wrapper": wrapper,
    }
    prefix = "".join(f"{key}={shlex.quote(value)}\n" for key, value in assigns.items())
    stdin = env_file(plan.env_names, environ)
    result = box.run(prefix + LAUNCH_SCRIPT, stdin=stdin, timeout=timeout, label="the launch")
    if result.exit_status == 3:
        raise GateError(
            f"not launched on {box.name}: {result.stderr_tail()}",
            hint=f"watch it (rentcheck watch --host {box.name} --session {plan.session}) or "
            "pick another --session",
        )
    if result.exit_status == 4:
        raise GateError(
            f"not launched on {box.name}: {result.stderr_tail()}",
            hint="install tmux on the box (apt-get install -y tmux), or use --detach auto",
        )
    out = result.stdout.decode("utf-8", "replace")
    if not result.ok or "rentcheck-launch: started" not in out:
        raise RemoteError(
            f"the launch on {box.name} failed (exit {result.exit_status}): {result.stderr_tail()}",
            hint="run the command by hand over ssh to see why",
        )
    status = parse_status(out.split("rentcheck-launch: started", 1)[1])
    try:
        return Launched(
            host=box.name,
            session=plan.session,
            pid=int(status["pid"]),
            pgid=int(status["pgid"]),
            start_ticks=int(status["start_ticks"]),
            started_at=int(status["started_at"]),
            log=status["log"],
            log_start=int(status.get("log_start") or 0),
            cwd=status["cwd"],
            ckpt_dir=status.get("ckpt_dir") or None,
            command_sha256=status["command_sha256"],
            detach=status.get("detach", ""),
            boot_id=status.get("boot_id", ""),
        )
    except (KeyError, ValueError) as exc:
        raise RemoteError(f"the launch on {box.name} wrote an unreadable status: {exc}") from None

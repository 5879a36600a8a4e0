"""RC33x (launch gate) and RC35x (watch gate): what a launched job's findings mean."""

from __future__ import annotations

import functools

from rentcheck.model import Applicability, Rule, Severity

__all__ = ["DEAD_CODES", "LAUNCH_RULES", "RULES_BY_CODE", "WATCH_RULES"]

_E = Severity.ERROR
_W = Severity.WARNING
_N = Severity.NOTE


def _launch(  # noqa: PLR0917 - rule tables read best as positional rows
    code: str,
    name: str,
    summary: str,
    why: str,
    bad: str,
    good: str,
    fix: str,
    severity: Severity = _E,
    family: str = "launch",
) -> Rule:
    return Rule(
        code=code,
        name=name,
        family=family,
        summary=summary,
        why=why,
        example_bad=bad,
        example_good=good,
        fix=fix,
        fix_applicability=Applicability.NONE,
        default_severity=severity,
    )


_watch = functools.partial(_launch, family="watch")


LAUNCH_RULES: tuple[Rule, ...] = (
    _launch(
        "RC330",
        "launched-job-not-alive",
        "The launched job is not running: its pid is gone or belongs to another process.",
        "A job that died at start (a bad path, a missing module, an exit in the first second) "
        "looks launched from the outside; the bill runs on an idle box until someone looks.",
        "status: pid 4121 does not exist, no exit status",
        "status: pid 4121 alive, started at the recorded time",
        "Read the log (rentcheck prints its tail), fix the command and launch again.",
    ),
    _launch(
        "RC331",
        "launched-job-in-login-session",
        "The launched job does not lead its own session, so a hang-up of the SSH login kills it.",
        "A job started in the SSH session gets SIGHUP when the connection drops, which on "
        "rented boxes behind NAT happens several times a day.",
        "bash run.sh &   # still in the login session",
        "rentcheck launch --host box -- bash run.sh   # tmux, or setsid + nohup",
        "Launch with rentcheck launch (tmux or setsid), never with a bare `&`.",
    ),
    _launch(
        "RC332",
        "no-first-step-line",
        "The job's log shows no step line within the first-step timeout.",
        "A job that loads forever, waits on input, or prints block-buffered output shows no "
        "progress; the launch gate is the moment to find out, not hours later.",
        "log after 60 s: 'loading dataset...'",
        "log after 8 s: 'step=1 loss=2.31'",
        "Look at the log; set [tool.rentcheck.launch] step-patterns if your steps look "
        "different, or raise first-step-timeout for a slow start.",
    ),
    _launch(
        "RC333",
        "traceback-at-log-head",
        "The head of the job's log holds a Python traceback.",
        "A traceback in the first lines means the run failed or a worker crashed at start, "
        "even when the process lingers (a hung DataLoader join).",
        "Traceback (most recent call last): ... ModuleNotFoundError: No module named 'x'",
        "step=1 loss=2.31",
        "Fix the error shown and launch again.",
    ),
    _launch(
        "RC334",
        "launched-job-exited",
        "The job already exited during the launch check.",
        "A training run that exits within the first minute did not train; its exit status "
        "and log tail say why.",
        "exit status 1 after 2 s",
        "still running after the first step",
        "Read the log tail, fix the command and launch again.",
    ),
    _launch(
        "RC335",
        "no-launched-job",
        "There is no job of this session on the box (no status file).",
        "launch-check and watch judge the job that `rentcheck launch` started; without its "
        "status file there is nothing to judge, which must not read as healthy.",
        "~/.rentcheck/jobs/train/status: No such file",
        "rentcheck launch --host box --session train -- ...",
        "Launch with rentcheck launch, or pass the --session it used.",
    ),
)

WATCH_RULES: tuple[Rule, ...] = (
    _watch(
        "RC350",
        "job-gone",
        "The job is gone without an exit status (killed with its wrapper, or a reboot).",
        "A SIGKILL, an OOM kill of the whole group or a reboot leave no exit status; the "
        "watcher must say so instead of waiting for a log line that never comes.",
        "pid 4121 does not exist; no exit status",
        "pid 4121 alive",
        "See the log tail and the newest checkpoint; relaunch the same command to resume.",
    ),
    _watch(
        "RC351",
        "job-failed",
        "The job exited with a nonzero status.",
        "Exit 137 with no traceback is a SIGKILL, usually the cgroup OOM killer; any other "
        "nonzero status is a crash the log tail explains.",
        "exit status 137",
        "exit status 0",
        "Read the log tail; for 137 compare oom_kill with the audit's baseline.",
    ),
    _watch(
        "RC352",
        "finished-too-fast",
        "The job exited successfully in under half its expected duration.",
        "A run that 'finished' in a tenth of the expected time usually stopped early (a "
        "data loader that ran out, an early-stop bug, a wrong step count).",
        "exit 0 after 3 min, expected 6 h",
        "exit 0 after 5.8 h",
        "Check the final step against the plan; set [tool.rentcheck.watch] expected-duration.",
    ),
    _watch(
        "RC353",
        "job-finished",
        "The job exited with status 0.",
        "A finished run still has to be pulled and verified before the meter stops; the note "
        "carries the exit status and the final step, which the pull gate compares with the plan.",
        "exit status 0 at step 12",
        "exit status 0 at step 12000 (the planned steps)",
        "Pull and verify the results: rentcheck manifest, then rentcheck verify.",
        _N,
    ),
    _watch(
        "RC354",
        "log-stalled",
        "The job is alive but its log has not advanced within the stall bound.",
        "An alive-but-silent run (a hung DataLoader join, a deadlocked collective) bills "
        "for hours; liveness by pid alone never fires.",
        "log unchanged for 42 min (bound 20 min)",
        "log advanced 310 steps since the last watch",
        "Look at the job (py-spy dump, nvidia-smi); raise stall-after if it has long "
        "silent phases.",
        _W,
    ),
    _watch(
        "RC355",
        "checkpoint-stale",
        "The newest checkpoint is older than the configured bound.",
        "A run that stopped saving loses everything since the last save when the box goes.",
        "newest checkpoint 3 h old (bound 1 h)",
        "newest checkpoint 4 min old",
        "Check the save path and cadence; set [tool.rentcheck.watch] checkpoint-max-age.",
        _W,
    ),
    _watch(
        "RC356",
        "disk-headroom-low",
        "A watched filesystem is nearly full in bytes or inodes.",
        "The next checkpoint save fails on a full disk (or with no free inodes) after hours of "
        "paid compute, and often leaves a truncated file behind.",
        "/root/autodl-tmp 97% used",
        "/root/autodl-tmp 61% used",
        "Delete old checkpoints or caches, or move the run's output to a larger disk.",
        _W,
    ),
    _watch(
        "RC357",
        "new-oom-kill",
        "The memory cgroup's oom_kill counter rose since the launch baseline.",
        "The counter is the only authoritative OOM evidence: a worker or the job was "
        "killed for memory, often with no traceback.",
        "oom_kill 0 at launch, 2 now",
        "oom_kill unchanged",
        "Use fewer DataLoader workers or a smaller batch, or rent more memory.",
        _W,
    ),
    _watch(
        "RC358",
        "gpu-degraded",
        "A GPU reports an active slowdown, or logged a new Xid error since the first watch.",
        "A throttling card trains at a fraction of the speed you pay for; Xid 79 or 48 mean the "
        "GPU fell off the bus or corrupts memory, and no code change helps.",
        "GPU 0 hw_thermal_slowdown Active; new Xid 79",
        "GPU 0 98% utilised, no slowdown",
        "Check cooling and the card; ask the provider for another box.",
        _W,
    ),
    _watch(
        "RC359",
        "watch-fact-timed-out",
        "A fact the watch needs did not answer in time (a hung mount, a stuck nvidia-smi).",
        "A hung `df` or `nvidia-smi` would hang a naive watcher forever; here it is a "
        "finding, and the rest of the watch still reports.",
        "nvidia-smi --query-gpu timed out after 4 s",
        "every fact answered",
        "Look at the mount or the driver on the box; a hung mount often needs a remount.",
        _W,
    ),
    _watch(
        "RC360",
        "job-wrapper-gone",
        "The wrapper is gone but processes of the job's group still run.",
        "Without the wrapper nobody records the exit status; the remaining processes may "
        "be orphaned DataLoader workers holding the GPU.",
        "wrapper pid 4121 gone, 3 processes of group 4121 alive",
        "wrapper alive",
        "Inspect the group (ps -o pid,args -g PGID) and stop what is left.",
        _W,
    ),
)

# A watch that finds one of these exits 3: the job is dead or finished badly.
DEAD_CODES = frozenset({"RC350", "RC351", "RC352"})

RULES_BY_CODE = {rule.code: rule for rule in (*LAUNCH_RULES, *WATCH_RULES)}

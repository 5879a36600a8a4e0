"""RC33x (launch gate) and RC35x (watch gate): what a launched job's findings mean."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = ["DEAD_CODES", "LAUNCH_RULES", "RULES_BY_CODE", "WATCH_RULES"]

_E = Severity.ERROR
_W = Severity.WARNING
_N = Severity.NOTE


LAUNCH_RULES: tuple[Rule, ...] = (
    Rule(
        code="RC330",
        name="launched-job-not-alive",
        summary="The launched job is not running: its pid is gone or belongs to another process.",
        why=(
            "A job that died at start (a bad path, a missing module, an exit in the first "
            "second) looks launched from the outside; the bill runs on an idle box until "
            "someone looks."
        ),
        example_bad="status: pid 4121 does not exist, no exit status",
        example_good="status: pid 4121 alive, started at the recorded time",
        fix="Read the log (rentcheck prints its tail), fix the command and launch again.",
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC331",
        name="launched-job-in-login-session",
        summary=(
            "The launched job does not lead its own session, so a hang-up of the SSH login "
            "kills it."
        ),
        why=(
            "A job started in the SSH session gets SIGHUP when the connection drops, which on "
            "rented boxes behind NAT happens several times a day."
        ),
        example_bad="bash run.sh &   # still in the login session",
        example_good="rentcheck launch --host box -- bash run.sh   # tmux, or setsid + nohup",
        fix="Launch with rentcheck launch (tmux or setsid), never with a bare `&`.",
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC332",
        name="no-first-step-line",
        summary="The job's log shows no step line within the first-step timeout.",
        why=(
            "A job that loads forever, waits on input, or prints block-buffered output shows no "
            "progress; the launch gate is the moment to find out, not hours later."
        ),
        example_bad="log after 60 s: 'loading dataset...'",
        example_good="log after 8 s: 'step=1 loss=2.31'",
        fix=(
            "Look at the log; set [tool.rentcheck.launch] step-patterns if your steps look "
            "different, or raise first-step-timeout for a slow start."
        ),
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC333",
        name="traceback-at-log-head",
        summary="The head of the job's log holds a Python traceback.",
        why=(
            "A traceback in the first lines means the run failed or a worker crashed at start, "
            "even when the process lingers (a hung DataLoader join)."
        ),
        example_bad=(
            "Traceback (most recent call last): ... ModuleNotFoundError: No module named 'x'"
        ),
        example_good="step=1 loss=2.31",
        fix="Fix the error shown and launch again.",
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC334",
        name="launched-job-exited",
        summary="The job already exited during the launch check.",
        why=(
            "A training run that exits within the first minute did not train; its exit status "
            "and log tail say why."
        ),
        example_bad="exit status 1 after 2 s",
        example_good="still running after the first step",
        fix="Read the log tail, fix the command and launch again.",
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC335",
        name="no-launched-job",
        summary="There is no job of this session on the box (no status file).",
        why=(
            "launch-check and watch judge the job that `rentcheck launch` started; without its "
            "status file there is nothing to judge, which must not read as healthy."
        ),
        example_bad="~/.rentcheck/jobs/train/status: No such file",
        example_good="rentcheck launch --host box --session train -- ...",
        fix="Launch with rentcheck launch, or pass the --session it used.",
        family="launch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
)

WATCH_RULES: tuple[Rule, ...] = (
    Rule(
        code="RC350",
        name="job-gone",
        summary="The job is gone without an exit status (killed with its wrapper, or a reboot).",
        why=(
            "A SIGKILL, an OOM kill of the whole group or a reboot leave no exit status; the "
            "watcher must say so instead of waiting for a log line that never comes."
        ),
        example_bad="pid 4121 does not exist; no exit status",
        example_good="pid 4121 alive",
        fix="See the log tail and the newest checkpoint; relaunch the same command to resume.",
        family="watch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC351",
        name="job-failed",
        summary="The job exited with a nonzero status.",
        why=(
            "Exit 137 with no traceback is a SIGKILL, usually the cgroup OOM killer; any other "
            "nonzero status is a crash the log tail explains."
        ),
        example_bad="exit status 137",
        example_good="exit status 0",
        fix="Read the log tail; for 137 compare oom_kill with the audit's baseline.",
        family="watch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC352",
        name="finished-too-fast",
        summary="The job exited successfully in under half its expected duration.",
        why=(
            "A run that 'finished' in a tenth of the expected time usually stopped early (a "
            "data loader that ran out, an early-stop bug, a wrong step count)."
        ),
        example_bad="exit 0 after 3 min, expected 6 h",
        example_good="exit 0 after 5.8 h",
        fix="Check the final step against the plan; set [tool.rentcheck.watch] expected-duration.",
        family="watch",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC353",
        name="job-finished",
        summary="The job exited with status 0.",
        why=(
            "A finished run still has to be pulled and verified before the meter stops; the "
            "note carries the exit status and the final step, which the pull gate compares with "
            "the plan."
        ),
        example_bad="exit status 0 at step 12",
        example_good="exit status 0 at step 12000 (the planned steps)",
        fix="Pull and verify the results: rentcheck manifest, then rentcheck verify.",
        family="watch",
        default_severity=_N,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC354",
        name="log-stalled",
        summary="The job is alive but its log has not advanced within the stall bound.",
        why=(
            "An alive-but-silent run (a hung DataLoader join, a deadlocked collective) bills "
            "for hours; liveness by pid alone never fires."
        ),
        example_bad="log unchanged for 42 min (bound 20 min)",
        example_good="log advanced 310 steps since the last watch",
        fix=(
            "Look at the job (py-spy dump, nvidia-smi); raise stall-after if it has long silent "
            "phases."
        ),
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC355",
        name="checkpoint-stale",
        summary="The newest checkpoint is older than the configured bound.",
        why="A run that stopped saving loses everything since the last save when the box goes.",
        example_bad="newest checkpoint 3 h old (bound 1 h)",
        example_good="newest checkpoint 4 min old",
        fix="Check the save path and cadence; set [tool.rentcheck.watch] checkpoint-max-age.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC356",
        name="disk-headroom-low",
        summary="A watched filesystem is nearly full in bytes or inodes.",
        why=(
            "The next checkpoint save fails on a full disk (or with no free inodes) after hours "
            "of paid compute, and often leaves a truncated file behind."
        ),
        example_bad="/root/autodl-tmp 97% used",
        example_good="/root/autodl-tmp 61% used",
        fix="Free space from caches, and from old checkpoints only once a verified pull holds "
        "them (`rentcheck pull`), or move the run's output to a larger disk.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC357",
        name="new-oom-kill",
        summary="The memory cgroup's oom_kill counter rose since the launch baseline.",
        why=(
            "The counter is the only authoritative OOM evidence: a worker or the job was killed "
            "for memory, often with no traceback."
        ),
        example_bad="oom_kill 0 at launch, 2 now",
        example_good="oom_kill unchanged",
        fix="Use fewer DataLoader workers or a smaller batch, or rent more memory.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC358",
        name="gpu-degraded",
        summary=(
            "A GPU reports an active slowdown, or logged a new Xid error since the first watch."
        ),
        why=(
            "A throttling card trains at a fraction of the speed you pay for; Xid 79 or 48 mean "
            "the GPU fell off the bus or corrupts memory, and no code change helps."
        ),
        example_bad="GPU 0 hw_thermal_slowdown Active; new Xid 79",
        example_good="GPU 0 98% utilised, no slowdown",
        fix="Check cooling and the card; ask the provider for another box.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC359",
        name="watch-fact-timed-out",
        summary="A fact the watch needs did not answer in time (a hung mount, a stuck nvidia-smi).",
        why=(
            "A hung `df` or `nvidia-smi` would hang a naive watcher forever; here it is a "
            "finding, and the rest of the watch still reports."
        ),
        example_bad="nvidia-smi --query-gpu timed out after 4 s",
        example_good="every fact answered",
        fix="Look at the mount or the driver on the box; a hung mount often needs a remount.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC360",
        name="job-wrapper-gone",
        summary="The wrapper is gone but processes of the job's group still run.",
        why=(
            "Without the wrapper nobody records the exit status; the remaining processes may be "
            "orphaned DataLoader workers holding the GPU."
        ),
        example_bad="wrapper pid 4121 gone, 3 processes of group 4121 alive",
        example_good="wrapper alive",
        fix="Inspect the group (ps -o pid,args -g PGID) and stop what is left.",
        family="watch",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
)

# A watch that finds one of these exits 3: the job is dead or finished badly.
DEAD_CODES = frozenset({"RC350", "RC351", "RC352"})

RULES_BY_CODE = {rule.code: rule for rule in (*LAUNCH_RULES, *WATCH_RULES)}

"""The SLR rules: each a ``Rule`` (what the user reads) and a pure check of one sbatch script."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator

from rentcheck import Applicability, Finding, Rule, Severity, SourceFile
from rentcheck_slurm.script import BatchScript, parse_script, parse_signal, parse_time, signal_name

FAMILY = "slurm"
# Partition or QOS names that, by common convention, mark preemptible capacity. A cluster's
# own names vary: `#SBATCH --requeue` (or `--no-requeue`, an explicit choice) silences SLR002.
PREEMPTIBLE_RE = re.compile(
    r"preempt|spot|scaveng|standby|low|backfill|requeue|free|opportun", re.I
)
NODE_LOCAL_RE = re.compile(r"^[\"']?(\$\{?(TMPDIR|SLURM_TMPDIR)\b|/tmp(/|$)|/dev/shm(/|$))")
CKPT_NAME_RE = re.compile(r"(ckpt|checkpoint|save|output)[-_]?(dir|path|root)", re.I)
INTERVAL_RE = re.compile(
    r"(?:--)?(?:ckpt|checkpoint|save)[-_](?:interval|every|freq)(?:[-_](secs?|seconds|mins?|minutes|hours?))?"
    r"(?:=|\s+)[\"']?(\d+)([smh]?)\b",
    re.I,
)
_UNIT_SECONDS = {"s": 1, "sec": 1, "secs": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60}
_UNIT_SECONDS |= {"minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}


NO_SIGNAL = Rule(
    code="SLR001",
    name="no-warning-signal",
    summary="The job asks for no signal before its time limit (no `#SBATCH --signal=...@SECONDS`).",
    why=(
        "By default Slurm sends no signal before a job's end time: at the time limit the job's "
        "processes get SIGTERM and, KillWait seconds later (a cluster setting, often 30), "
        "SIGKILL. A save that takes longer than that never finishes, and the work since the "
        "last checkpoint is lost. `--signal=B:USR1@90` asks Slurm to send SIGUSR1 to the batch "
        "shell about 90 seconds before the end (Slurm may send it up to 60 seconds earlier than "
        "asked)."
    ),
    example_bad="#SBATCH --time=04:00:00\npython train.py",
    example_good=(
        "#SBATCH --time=04:00:00\n#SBATCH --signal=B:USR1@90\ntrap 'kill -USR1 $PID' "
        "USR1\npython train.py & PID=$!\nwait $PID"
    ),
    fix="Add `#SBATCH --signal=B:USR1@LEAD` with LEAD longer than a checkpoint takes, and trap it.",
    family=FAMILY,
    default_severity=Severity.WARNING,
    fix_applicability=Applicability.NONE,
)
NO_REQUEUE = Rule(
    code="SLR002",
    name="no-requeue-on-preemptible",
    summary="The job runs on a preemptible partition or QOS but does not ask for `--requeue`.",
    why=(
        "`--requeue` makes a batch job eligible to be requeued after a node failure or when a "
        "higher-priority job preempts it; without it the cluster's JobRequeue setting decides. "
        "Where preemption requeues (PreemptMode=REQUEUE), a job that may not be requeued is "
        "cancelled instead. A requeued job runs its batch script again from the beginning, so "
        "the script must resume from its checkpoint."
    ),
    example_bad="#SBATCH --partition=spot\npython train.py",
    example_good="#SBATCH --partition=spot\n#SBATCH --requeue\npython train.py --resume latest",
    fix=(
        "Add `#SBATCH --requeue` (and resume from the last checkpoint), or `--no-requeue` if "
        "the job must not run twice."
    ),
    family=FAMILY,
    default_severity=Severity.WARNING,
    fix_applicability=Applicability.NONE,
)
UNTRAPPED = Rule(
    code="SLR003",
    name="warning-signal-not-trapped",
    summary="`--signal=B:SIG@...` signals the batch shell, but the script sets no `trap` for SIG.",
    why=(
        "With the B: prefix Slurm signals only the batch shell. A non-interactive bash with no "
        "trap for USR1, USR2, TERM or INT is terminated by it (their default action), so the "
        "warning kills the job early instead of making it save a checkpoint."
    ),
    example_bad="#SBATCH --signal=B:USR1@90\npython train.py",
    example_good=(
        "#SBATCH --signal=B:USR1@90\ntrap 'kill -USR1 $PID' USR1\npython train.py & "
        "PID=$!\nwait $PID"
    ),
    fix="Add `trap 'kill -USR1 $PID' USR1` (forwarding to the trainer, which saves on it).",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
MISSES_SHELL = Rule(
    code="SLR004",
    name="trap-never-signalled",
    summary=(
        "The script traps the `--signal` signal, but without the B: prefix Slurm never sends it "
        "to the batch shell."
    ),
    why=(
        "sbatch's `--signal` without `B:` signals every job step but not the batch shell "
        "itself, so a `trap` in the batch script never runs. Either signal the shell "
        "(`--signal=B:USR1@90`) and forward it, or drop the trap and let the steps (srun) "
        "handle the signal themselves."
    ),
    example_bad="#SBATCH --signal=USR1@90\ntrap 'touch STOP' USR1",
    example_good="#SBATCH --signal=B:USR1@90\ntrap 'touch STOP' USR1",
    fix="Write `--signal=B:SIG@LEAD` when the batch script itself traps the signal.",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
FOREGROUND = Rule(
    code="SLR005",
    name="trap-behind-foreground-command",
    summary=(
        "The script traps the warning signal but never uses `wait`, so the trainer runs in the "
        "foreground and the trap waits for it."
    ),
    why=(
        "When bash receives a trapped signal while a foreground command runs, the trap runs "
        "only after that command completes; for a training run that is at the SIGKILL. Started "
        "in the background and waited for with the `wait` builtin, the signal makes `wait` "
        "return at once and the trap runs while there is still time to save."
    ),
    example_bad="trap 'kill -USR1 $PID' USR1\npython train.py",
    example_good="trap 'kill -USR1 $PID' USR1\npython train.py & PID=$!\nwait $PID",
    fix="Start the trainer with `&`, keep `PID=$!`, and `wait $PID` (twice, if the trap forwards).",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
SHORT_TIME = Rule(
    code="SLR006",
    name="time-limit-below-checkpoint-interval",
    summary="`--time` is no longer than the checkpoint interval the script passes to the trainer.",
    why=(
        "A job that reaches its time limit before its first checkpoint saves nothing: every "
        "run, and every requeue (which starts the script from the beginning), starts from step "
        "zero again and the allocation is paid for without progress."
    ),
    example_bad="#SBATCH --time=01:00:00\npython train.py --checkpoint-interval 2h",
    example_good="#SBATCH --time=04:00:00\npython train.py --checkpoint-interval 30m",
    fix="Checkpoint more often than the time limit (with room for the save), or ask for more time.",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
NODE_LOCAL = Rule(
    code="SLR007",
    name="checkpoint-on-node-local-tmp",
    summary="Checkpoints are written under `$TMPDIR`, `$SLURM_TMPDIR`, `/tmp` or `/dev/shm`.",
    why=(
        "On most clusters these are node-local and per job: Slurm's job_container/tmpfs plugin, "
        "for one, gives each job a private /tmp and /dev/shm that are removed when the job "
        "ends, and a requeued job may start on another node. A copy-out at the end of the "
        "script does not run when the job is killed at its time limit or preempted."
    ),
    example_bad="python train.py --checkpoint-dir $TMPDIR/ckpt",
    example_good="python train.py --checkpoint-dir /shared/$USER/run42/ckpt",
    fix=(
        "Write checkpoints to shared storage that outlives the job (the cluster's project or "
        "scratch file system)."
    ),
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)
LATE_DIRECTIVE = Rule(
    code="SLR008",
    name="directive-after-command",
    summary=(
        "An `#SBATCH` line comes after the first command of the script, where sbatch ignores it."
    ),
    why=(
        "sbatch reads `#SBATCH` options only before the first executable line of the script and "
        "stops processing them at the first non-comment, non-blank line, so a `--time`, "
        "`--signal` or `--requeue` placed after a `module load` or `set -e` silently does not "
        "apply."
    ),
    example_bad="set -euo pipefail\n#SBATCH --requeue",
    example_good="#SBATCH --requeue\nset -euo pipefail",
    fix="Move every `#SBATCH` line above the first command.",
    family=FAMILY,
    default_severity=Severity.ERROR,
    fix_applicability=Applicability.NONE,
)

RULES = (
    NO_SIGNAL,
    NO_REQUEUE,
    UNTRAPPED,
    MISSES_SHELL,
    FOREGROUND,
    SHORT_TIME,
    NODE_LOCAL,
    LATE_DIRECTIVE,
)


def _finding(rule: Rule, source: SourceFile, line: int, message: str) -> Finding:
    return rule.finding(message, path=source.path, line=line, col=1)


def _first_line(script: BatchScript) -> int:
    """The first #SBATCH line, where a missing option is reported."""
    return next((i + 1 for i, t in enumerate(script.lines) if t.lstrip().startswith("#SBATCH")), 1)


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _traps(script: BatchScript) -> dict[str, int]:
    """Signal name -> line of each `trap ACTION SIG...` in the body."""
    found: dict[str, int] = {}
    for line, text in script.body():
        words = _words(text)
        if len(words) >= 3 and words[0] == "trap":
            for word in words[2:]:
                name = signal_name(word)
                if name:
                    found.setdefault(name, line)
    return found


_WAIT_RE = re.compile(r"(^|[;&|({]\s*)wait\b")


def signal_findings(source: SourceFile) -> Iterator[Finding]:
    """SLR001, SLR003, SLR004 and SLR005: they all read the one `--signal` directive."""
    script = parse_script(source.text)
    if not any(t.lstrip().startswith("#SBATCH") for t in script.lines[: script.body_start]):
        return  # no #SBATCH line in the header: not a batch script
    directive = script.option("--signal")
    if directive is None:
        yield _finding(
            NO_SIGNAL,
            source,
            _first_line(script),
            "no `#SBATCH --signal=B:USR1@90`: the job gets no warning before its time limit",
        )
        return
    spec = parse_signal(directive.value or "")
    if spec is None:
        return
    traps = _traps(script)
    if spec.batch_shell and spec.name not in traps:
        yield _finding(
            UNTRAPPED,
            source,
            directive.line,
            f"--signal=B:{spec.name} reaches the batch shell, which has no `trap ... {spec.name}`",
        )
    if not spec.batch_shell and spec.name in traps:
        yield _finding(
            MISSES_SHELL,
            source,
            traps[spec.name],
            f"this trap never runs: `--signal={directive.value}` signals job steps, "
            f"not the batch shell (write `--signal=B:{directive.value}`)",
        )
    if spec.batch_shell and spec.name in traps:
        body = "\n".join(text for _, text in script.body())
        if not any(_WAIT_RE.search(line) for line in body.splitlines()):
            yield _finding(
                FOREGROUND,
                source,
                traps[spec.name],
                f"the {spec.name} trap waits for the foreground command: start the "
                "trainer with `&` and `wait` for it",
            )


def _only(rule: Rule) -> Callable[[SourceFile], Iterator[Finding]]:
    def check(source: SourceFile) -> Iterator[Finding]:
        return (f for f in signal_findings(source) if f.code == rule.code)

    return check


check_no_signal = _only(NO_SIGNAL)
check_untrapped = _only(UNTRAPPED)
check_misses_shell = _only(MISSES_SHELL)
check_foreground = _only(FOREGROUND)


def check_requeue(source: SourceFile) -> Iterator[Finding]:
    script = parse_script(source.text)
    if script.option("--requeue") or script.option("--no-requeue"):
        return
    for name in ("--partition", "--qos"):
        directive = script.option(name)
        if directive and directive.value and PREEMPTIBLE_RE.search(directive.value):
            yield _finding(
                NO_REQUEUE,
                source,
                directive.line,
                f"{name}={directive.value} looks preemptible but the job does not "
                "ask for `--requeue`",
            )
            return


def _interval_seconds(text: str) -> int | None:
    match = INTERVAL_RE.search(text)
    if match is None:
        return None
    name_unit, number, value_unit = match.groups()
    unit = (value_unit or name_unit or "").lower()
    if unit not in _UNIT_SECONDS:
        return None  # a bare number is usually steps, not time: nothing to compare
    return int(number) * _UNIT_SECONDS[unit]


def check_time(source: SourceFile) -> Iterator[Finding]:
    script = parse_script(source.text)
    directive = script.option("--time")
    limit = parse_time(directive.value or "") if directive else None
    if directive is None or limit is None:
        return
    for line, text in script.body():
        interval = _interval_seconds(text)
        if interval is not None and interval >= limit:
            yield _finding(
                SHORT_TIME,
                source,
                line,
                f"checkpoints every {interval}s but --time={directive.value} is "
                f"{limit}s: the job ends before its first checkpoint",
            )
            return


def check_node_local(source: SourceFile) -> Iterator[Finding]:
    script = parse_script(source.text)
    for line, text in script.body():
        words = _words(text)
        for i, word in enumerate(words):
            name, eq, value = word.partition("=")
            if not eq and i + 1 < len(words) and word.startswith("--"):
                value = words[i + 1]
            elif not eq:
                continue
            if CKPT_NAME_RE.search(name) and NODE_LOCAL_RE.match(value):
                yield _finding(
                    NODE_LOCAL,
                    source,
                    line,
                    f"{name.lstrip('-')} is {value}: node-local storage that does not "
                    "survive the job",
                )
                break


def check_late_directives(source: SourceFile) -> Iterator[Finding]:
    script = parse_script(source.text)
    for line in script.late_directives:
        yield _finding(
            LATE_DIRECTIVE,
            source,
            line,
            "sbatch ignores this #SBATCH line: it comes after the first command",
        )

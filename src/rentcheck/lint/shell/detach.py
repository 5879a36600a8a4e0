"""Detached launches: RC108 unexported variables, RC109 stdin left attached, RC110 buffered
Python output."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.redirects import INHERITED, output_destinations, ssh_options
from rentcheck.lint.shell.words import loose_value, text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import Command, ShellScript

UNEXPORTED_RULE = Rule(
    code="RC108",
    name="detached-unexported-variable",
    family="shell",
    summary="A variable set without `export` is used inside a detached single-quoted command",
    why=(
        "In `DATA=/root/autodl-tmp; tmux new-session -d 'python train.py --data $DATA'` the "
        "single quotes stop this shell from expanding `$DATA`; the detached shell expands it "
        "instead, and it never received the variable because it was not exported. The job "
        "starts with an empty path and writes to the wrong place, or dies after the launcher "
        "reported success."
    ),
    example_bad="DATA=/root/autodl-tmp\ntmux new-session -d 'python train.py --data $DATA'",
    example_good='export DATA=/root/autodl-tmp\ntmux new-session -d "python train.py --data $DATA"',
    fix="`export` the variable, or use double quotes so it is expanded before the launch.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

STDIN_RULE = Rule(
    code="RC109",
    name="ssh-background-holds-session",
    family="shell",
    summary="A job backgrounded inside an ssh command keeps its output on the session",
    why=(
        "A non-interactive shell already gives `cmd &` /dev/null as stdin, so a plain "
        "script or sbatch job is fine. Inside a command given to ssh it is the output that "
        "matters: a background job whose stdout or stderr still point at the session holds "
        "the channel open, so `ssh box 'nohup python train.py &'` does not return until "
        "training ends (nohup redirects nothing when stdout is not a terminal), and the "
        "launcher hangs; `cd dir && job > log 2>&1 &` hangs too, because the subshell that "
        "runs the list keeps the session while it waits for the job. When the connection is "
        "cut instead, the job's next write to the dead session kills it with SIGPIPE. "
        "Redirecting both streams of what goes to the background to a log detaches it."
    ),
    example_bad="ssh box 'nohup python -u train.py &'",
    example_good="ssh box 'nohup python -u train.py > train.log 2>&1 < /dev/null &'",
    fix=(
        "Send the job's stdout and stderr to a file: `> train.log 2>&1 < /dev/null &`, or "
        "`{ cd dir && job; } > train.log 2>&1 < /dev/null &` for a list."
    ),
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

BUFFERED_RULE = Rule(
    code="RC110",
    name="detached-python-buffered",
    family="shell",
    summary="Detached Python writes its log to a file or pipe without `-u` or PYTHONUNBUFFERED=1",
    why=(
        "Python block-buffers stdout when it is not a terminal, so a detached run whose "
        "output goes to a log file, a pipe, nohup.out or an ssh session shows nothing for "
        "minutes, and a kill loses the last lines: the watcher sees no progress and you "
        "cannot tell a hang from a slow start while the meter runs. (Inside tmux or screen "
        "without a redirect it writes to a terminal and is line-buffered: no finding.) "
        "`python -u` or PYTHONUNBUFFERED=1 makes every line reach the log as it is printed."
    ),
    example_bad="nohup python train.py > train.log 2>&1 < /dev/null &",
    example_good="nohup python -u train.py > train.log 2>&1 < /dev/null &",
    fix="Add `-u` after the interpreter or `export PYTHONUNBUFFERED=1` before the launch.",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

DETACHERS = frozenset({"nohup", "setsid", "disown"})
_DETACHED_RUNNERS = frozenset({"tmux", "screen", "nohup", "setsid", "bash", "sh", "su", "timeout"})
_PYTHON = re.compile(r"^python(\d(\.\d+)?)?$")
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_QUIET = frozenset({"sleep", "wait", "true", ":"})


def _assigned_and_exported(script: ShellScript) -> tuple[dict[str, int], set[str], bool]:
    assigned: dict[str, int] = {}
    exported: set[str] = set()
    allexport = False
    for node in script.of("variable_assignment", "declaration_command"):
        if node.type == "variable_assignment" and (
            node.parent is None or node.parent.type != "declaration_command"
        ):
            if node.parent is not None and node.parent.type == "command":
                continue  # `VAR=x cmd`: an environment prefix, exported to cmd only
            name = text(node).split("=", 1)[0]
            assigned.setdefault(name, int(node.start_point[0]) + 1)
        elif node.type == "declaration_command":
            words = [text(c) for c in node.children]
            if words and (words[0] == "export" or "-x" in words):
                for child in node.children:
                    if child.type in ("variable_assignment", "variable_name", "word"):
                        exported.add(text(child).split("=", 1)[0])
    for command in script.commands_named(("set", "export")):
        if command.name == "set" and ("-a" in command.argv or "allexport" in command.argv):
            allexport = True
        if command.name == "export":
            exported.update(a.split("=", 1)[0] for a in command.argv)
    return assigned, exported, allexport


def _single_quoted_variables(script: ShellScript) -> list[tuple[Command, str]]:
    """(command, variable) for each $VAR inside a single-quoted command string that a
    detached runner (tmux, nohup, ...) hands to another shell."""
    found: list[tuple[Command, str]] = []
    # Not ssh: the command runs remotely, where exporting would not help.
    for command in script.commands_named(_DETACHED_RUNNERS):
        for arg in command.args:
            if arg.type != "raw_string":
                continue
            if not any(inner.outer is command for inner in script.nested()):
                continue
            found.extend((command, name) for name in dict.fromkeys(_VAR.findall(loose_value(arg))))
    return found


def _unexported(script: ShellScript) -> Iterator[Hit]:
    # The candidates first: few scripts have any, and reading every assignment costs more.
    candidates = _single_quoted_variables(script)
    if not candidates:
        return
    assigned, exported, allexport = _assigned_and_exported(script)
    if allexport:
        return
    for command, name in candidates:
        if name in assigned and name not in exported:
            yield hit(
                command.line,
                command.col,
                f"${name} is set on line {assigned[name]} without `export`, but is "
                f"expanded inside the single-quoted command given to `{command.name}`: "
                f"the detached shell sees it empty; `export {name}`",
                variable=name,
            )


def _is_detached(command: Command) -> bool:
    return command.name in DETACHERS or command.backgrounded()


# What a training launcher starts in the background: long-running programs that may read
# stdin or keep an ssh session open. A GUI opened with `"$browser" &` is not one of them.
_LONG_RUNNING = re.compile(
    r"^(python[\d.]*|torchrun|accelerate|deepspeed|bash|sh|zsh|java|node|ssh|rsync|"
    r"tensorboard|jupyter|jupyter-lab|docker|srun|mpirun|xargs|tail|watch|\./.*|.*\.sh)$"
)


_WRAPPERS = frozenset({"nohup", "setsid", "env", "exec", "nice", "ionice", "stdbuf"})


def _launch_words(command: Command) -> list[str]:
    """The program and arguments actually launched (after nohup/setsid/env wrappers)."""
    words = [command.name, *command.argv]
    while words and words[0] in _WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[1:]
    return words


@lru_cache(maxsize=4096)
def _is_long_running(program: str) -> bool:
    # Cached: asked of every command name, and a script uses few distinct names.
    return _LONG_RUNNING.match(program.rsplit("/", 1)[-1]) is not None


def is_python(program: str) -> bool:
    """Whether a command of this name is a Python interpreter (python, python3, python3.11)."""
    return program.startswith("python") and _PYTHON.match(program) is not None


_is_python = is_python


# Whether a command of this name can launch the program the rule is about, decided from the
# name alone: the program is the name itself unless the name is a wrapper. The rules ask for
# these commands only, before anything that reads arguments or climbs the tree. (Cached: asked
# of each distinct name of every script.)


@lru_cache(maxsize=4096)
def _may_launch_long_running(name: str) -> bool:
    if name in _QUIET or name == "disown":
        return False
    return name in _WRAPPERS or _is_long_running(name)


@lru_cache(maxsize=4096)
def _may_launch_python(name: str) -> bool:
    return name in _WRAPPERS or _is_python(name) or _is_python_variable(name)


# `"$PY" train.py`, `$PYTHON -m trainer`: an interpreter held in a variable.
_PYTHON_VARIABLE = re.compile(r"^\$\{?[A-Za-z_]*PY(THON)?[0-9]*\}?$", re.IGNORECASE)


def _is_python_variable(name: str) -> bool:
    return name.startswith("$") and _PYTHON_VARIABLE.match(name) is not None


def _through_ssh(current: ShellScript) -> bool:
    """Whether this (nested) script runs on the far side of an ssh session whose output the
    local ssh waits for (not ``ssh -f``, which goes to the background itself)."""
    outer: Command | None = current.outer
    while outer is not None:
        if outer.name == "ssh":
            return "f" not in ssh_options(outer.argv)[0]
        outer = outer.script.outer
    return False


def _holds_output(command: Command) -> str | None:
    """The stream of the backgrounded command still pointing at the session, if any."""
    stdout, stderr = output_destinations(command)
    if stdout == INHERITED:
        return "stdout"
    return "stderr" if stderr == INHERITED else None


def _stdin_hits(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        if current.outer is None or not _through_ssh(current):
            continue
        # One judgement per backgrounded statement. `a && b > log 2>&1 &` runs in a
        # subshell that keeps the session's stdout while it waits for b, whatever b's own
        # redirects say; a single command is judged by its redirects.
        last: dict[int, Command] = {}
        for command in current.commands_where(_may_hold_session):
            if command.backgrounded():
                last[command.statement().start_byte] = command
        for command in last.values():
            in_subshell = _in_list(command)
            stream = "stdout" if in_subshell else _holds_output(command)
            if stream is None:
                continue
            launched = _launch_words(command) or [command.name]
            holder = "the subshell running this list keeps" if in_subshell else "it keeps its"
            yield hit(
                command.line,
                command.col,
                f"`{' '.join(launched[:3])} &` runs inside an ssh command and {holder} "
                f"{stream} on the session: ssh waits for it to end (and a cut connection "
                "kills it); redirect it (`{ …; } > job.log 2>&1 < /dev/null &`)",
                stream=stream,
            )


def _in_list(command: Command) -> bool:
    """Whether the command is part of an `a && b` / `a; b` list inside its statement (the
    parser hangs redirects written after the list's last command on the whole list)."""
    statement = command.statement()
    node = command.node.parent
    while node is not None:
        if node.type == "list":
            return True
        if node == statement:
            return False
        node = node.parent
    return False


@lru_cache(maxsize=4096)
def _may_hold_session(name: str) -> bool:
    return name not in ("wait", "true", ":", "disown", "tmux", "screen")


def _has_unbuffered_env(script: ShellScript) -> bool:
    if b"PYTHONUNBUFFERED" not in script.source.data:
        return False  # no node's text can hold it: no need to find the assignments
    return any(
        "PYTHONUNBUFFERED" in text(node)
        for node in script.of("declaration_command", "variable_assignment")
    )


def _unbuffered_flag(launched: list[str]) -> bool:
    return "-u" in launched[1:] or any(
        w.startswith("-") and not w.startswith("--") and "u" in w[1:] and w != "-m"
        for w in launched[1:2]
    )


_TERMINALS = frozenset({"tmux", "screen"})


def _log_is_buffered(command: Command, in_terminal: bool, via_ssh: bool) -> bool:
    """Whether the detached command's stdout is a file or pipe (block-buffered), not a
    terminal, /dev/null, or a stdout the script inherits from whoever runs it."""
    stdout, _ = output_destinations(command)
    if stdout in ("/dev/null", "closed"):
        return False
    if stdout != INHERITED:
        return True
    if in_terminal:
        return False  # tmux/screen give the program a pty: line-buffered
    # nohup sends a terminal's output to nohup.out; through ssh it is the session's pipe.
    return via_ssh or command.name == "nohup"


def _buffered_hits(script: ShellScript) -> Iterator[Hit]:
    unbuffered_env: bool | None = None  # read on the first detached python: most have none
    for current in script.all_scripts():
        outer = current.outer.name if current.outer is not None else None
        in_terminal = outer in _TERMINALS
        detached_context = in_terminal or outer in ("nohup", "setsid")
        via_ssh = current.outer is not None and _through_ssh(current)
        for command in current.commands_where(_may_launch_python):
            launched = _launch_words(command)
            if not launched or not (_is_python(launched[0]) or _is_python_variable(launched[0])):
                continue
            if not (detached_context or _is_detached(command)):
                continue
            if _unbuffered_flag(launched) or "PYTHONUNBUFFERED" in command.env:
                continue
            if not _log_is_buffered(command, in_terminal, via_ssh):
                continue
            if unbuffered_env is None:
                unbuffered_env = _has_unbuffered_env(script)
            if unbuffered_env:
                continue
            yield hit(
                command.line,
                command.col,
                f"detached `{launched[0]}` writes its log to a file or pipe without `-u` or "
                "PYTHONUNBUFFERED=1: the log stays empty until the buffer fills; use "
                "`python -u`",
            )


UNEXPORTED = shell_check(UNEXPORTED_RULE, _unexported)
STDIN = shell_check(STDIN_RULE, _stdin_hits)
BUFFERED = shell_check(BUFFERED_RULE, _buffered_hits)

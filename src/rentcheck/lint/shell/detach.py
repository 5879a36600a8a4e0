"""Detached launches: RC108 unexported variables, RC109 stdin left attached, RC110 buffered
Python output."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from rentcheck.lazy_regex import lazy_regex
from rentcheck.lint.shell.common import hit, shell_check
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
    name="background-without-stdin-redirect",
    family="shell",
    summary="A background or nohup launch keeps the terminal's stdin",
    why=(
        "A job started with `&` or nohup still holds the launching shell's stdin. Over ssh "
        "that keeps the session from closing (the ssh command hangs until the job ends), and "
        "a job that reads stdin (a prompt, `input()`, an ssh inside it) stops with SIGTTIN "
        "or eats the input meant for the next command. `< /dev/null` detaches it cleanly."
    ),
    example_bad="nohup python train.py > train.log 2>&1 &",
    example_good="nohup python -u train.py > train.log 2>&1 < /dev/null &",
    fix="Add `< /dev/null` to the launch (a suggestion: first check the job reads no input).",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

BUFFERED_RULE = Rule(
    code="RC110",
    name="detached-python-buffered",
    family="shell",
    summary="Detached Python runs without `-u` or PYTHONUNBUFFERED=1",
    why=(
        "Python block-buffers stdout when it is not a terminal, so a detached run's log stays "
        "empty for minutes and a crash loses the last lines: the watcher sees no progress and "
        "you cannot tell a hang from a slow start while the meter runs. `python -u` or "
        "PYTHONUNBUFFERED=1 makes every line reach the log as it is printed."
    ),
    example_bad="nohup python train.py > train.log 2>&1 < /dev/null &",
    example_good="nohup python -u train.py > train.log 2>&1 < /dev/null &",
    fix="Add `-u` after the interpreter or `export PYTHONUNBUFFERED=1` before the launch.",
    fix_applicability=Applicability.UNSAFE,
    default_severity=Severity.WARNING,
)

DETACHERS = frozenset({"nohup", "setsid", "disown"})
_DETACHED_RUNNERS = frozenset({"tmux", "screen", "nohup", "setsid", "bash", "sh", "su", "timeout"})
_PYTHON = lazy_regex(r"^python(\d(\.\d+)?)?$")
_VAR = lazy_regex(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
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
_LONG_RUNNING = lazy_regex(
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


def _is_python(program: str) -> bool:
    return program.startswith("python") and _PYTHON.match(program) is not None


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
    return name in _WRAPPERS or _is_python(name)


def _stdin_hits(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        for command in current.commands_where(_may_launch_long_running):
            if not _is_detached(command):
                continue
            launched = _launch_words(command)
            if not launched or not _is_long_running(launched[0]):
                continue
            if command.stdin_redirected():
                continue
            yield hit(
                command.line,
                command.col,
                f"`{' '.join(launched[:3])}` is started in the background with the terminal's "
                "stdin still attached; add `< /dev/null`",
            )


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


def _buffered_hits(script: ShellScript) -> Iterator[Hit]:
    unbuffered_env: bool | None = None  # read on the first detached python: most have none
    for current in script.all_scripts():
        detached_context = current.outer is not None and current.outer.name in (
            "tmux",
            "screen",
            "nohup",
            "setsid",
        )
        for command in current.commands_where(_may_launch_python):
            launched = _launch_words(command)
            if not launched or not _is_python(launched[0]):
                continue
            if not (detached_context or _is_detached(command)):
                continue
            if _unbuffered_flag(launched) or "PYTHONUNBUFFERED" in command.env:
                continue
            if unbuffered_env is None:
                unbuffered_env = _has_unbuffered_env(script)
            if unbuffered_env:
                continue
            yield hit(
                command.line,
                command.col,
                f"detached `{launched[0]}` without `-u` or PYTHONUNBUFFERED=1: its log stays "
                "empty until the buffer fills; use `python -u`",
            )


UNEXPORTED = shell_check(UNEXPORTED_RULE, _unexported)
STDIN = shell_check(STDIN_RULE, _stdin_hits)
BUFFERED = shell_check(BUFFERED_RULE, _buffered_hits)

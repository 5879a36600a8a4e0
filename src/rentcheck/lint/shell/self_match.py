"""RC106 pgrep-self-match and RC107 kill-then-relaunch-in-one-ssh: process patterns that hit
the very shell that runs them."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.redirects import ssh_remote_words
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import Command, ShellScript

SELF_MATCH_RULE = Rule(
    code="RC106",
    name="pgrep-self-match",
    family="shell",
    summary="`pgrep -f`/`pkill -f` pattern that matches its own command line",
    why=(
        "`-f` matches against full command lines, and the shell that runs "
        "`ssh box 'pkill -f train.py; sleep 2'`, `bash -c 'pgrep -f train.py && …'` or "
        "`ssh box bash -s train.py <<'EOF'` has that very text in its own command line (bash "
        "execs only the last simple command of a string, leaving no shell behind for that "
        "one; dash execs none). The count is one too high, so a 'wait until training exits' "
        "loop never ends, and `pkill -f` kills the shell running it (and the relaunch in the "
        "same string) instead of, or as well as, the trainer."
    ),
    example_bad="ssh box 'pkill -f train.py; sleep 2; pgrep -f train.py && echo still running'",
    example_good=(
        'ssh box \'pkill -f "[t]rain.py"; sleep 2; pgrep -f "[t]rain.py" || echo stopped\''
    ),
    fix=(
        "Make the pattern unable to match itself: bracket one character (`[t]rain.py`), or "
        'match a pid file (`kill "$(cat train.pid)"`) instead of a command line.'
    ),
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

KILL_RELAUNCH_RULE = Rule(
    code="RC107",
    name="kill-then-relaunch-in-one-ssh",
    family="shell",
    summary="One `ssh host '…'` kills processes and then starts new work",
    why=(
        "`ssh box 'pkill -f train; nohup python train.py &'` looks like a restart, but the "
        "remote shell running that string has `train` in its own command line, so `pkill "
        "-f` kills it along with the old job, and the relaunch after the kill never runs. "
        "ssh returns (with the shell's signal status, often ignored), the run silently stops "
        "and the box keeps billing."
    ),
    example_bad="ssh box 'pkill -f train.py; nohup python train.py > log 2>&1 &'",
    example_good=(
        "ssh box 'pkill -f \"[t]rain.py\"'\n"
        "ssh box 'setsid nohup python -u train.py > log 2>&1 < /dev/null &'"
    ),
    fix="Split it: one ssh call that stops the old job, a second one that launches the new one.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

PROCESS_MATCHERS = frozenset({"pgrep", "pkill"})
KILLERS = frozenset({"pkill", "kill", "killall"})
_MAY_KILL = KILLERS | {"tmux"}  # tmux kill-session
LAUNCHERS = frozenset(
    {
        "nohup",
        "setsid",
        "python",
        "python3",
        "torchrun",
        "accelerate",
        "deepspeed",
        "bash",
        "sh",
        "tmux",
        "screen",
        "docker",
        "srun",
        "sbatch",
    }
)


def _pattern(command: Command) -> str | None:
    argv = command.argv
    if not any(
        a == "-f" or (a.startswith("-") and not a.startswith("--") and "f" in a[1:]) for a in argv
    ):
        return None
    positional = [a for a in argv if not a.startswith("-")]
    # Options with a value (-u USER, -s SIG, ...) leave their value among the words.
    for flag in ("-u", "-U", "-g", "-G", "-P", "-s", "-t", "--signal"):
        if flag in argv:
            value = argv[argv.index(flag) + 1] if argv.index(flag) + 1 < len(argv) else None
            if value in positional:
                positional.remove(value)
    return positional[-1] if positional else None


def _matches(pattern: str, haystack: str) -> bool:
    try:
        return re.search(pattern, haystack) is not None
    except re.error:
        return pattern in haystack


_POSITIONAL = re.compile(r"\$\{?([1-9])\}?")


def _script_arguments_of(current: ShellScript) -> list[str]:
    """``ARG…`` of ``bash -s ARG…`` (or ``ssh host bash -s ARG…``) feeding a heredoc: the
    heredoc's $1, $2, …"""
    outer = current.outer
    if outer is None or not current.heredoc:
        return []
    words = outer.argv
    if outer.name == "ssh":
        words = " ".join(ssh_remote_words(outer)).split()[1:]
    return words[words.index("-s") + 1 :] if "-s" in words else []


def _with_arguments(pattern: str, arguments: list[str]) -> str:
    """The pattern with $1, $2, … replaced by the script's arguments where they are known."""
    if not arguments:
        return pattern

    def value(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return arguments[index - 1] if index <= len(arguments) else match.group(0)

    return _POSITIONAL.sub(value, pattern)


def _execed_by_bash(command: Command, current: ShellScript) -> bool:
    """bash runs the last simple command of a ``-c`` string by exec, so no shell with the
    string in its command line is left when that one runs."""
    if current.heredoc or command.statement() is not command.node:
        return False
    statements = [c for c in current.root.children if c.type not in ("comment", ";", "\n")]
    return bool(statements) and statements[-1] == command.node


def _self_match_hits(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        for command in current.commands_named(PROCESS_MATCHERS):
            pattern = _pattern(command)
            if pattern is None:
                continue
            if current.outer is not None:
                pattern = _with_arguments(pattern, _script_arguments_of(current))
                outer_line = text(current.outer.node)
                if _matches(pattern, outer_line) and not _execed_by_bash(command, current):
                    yield hit(
                        command.line,
                        command.col,
                        f"`{command.name} -f {pattern}` also matches the shell running it "
                        f"(`{current.outer.name} …` carries the pattern in its command line); "
                        f"'{_bracketed(pattern)}'",
                        pattern=pattern,
                        enclosing=current.outer.name,
                    )
                    continue
            script_name = os.path.basename(script.source.path)
            if current.outer is None and _matches(pattern, script_name):
                yield hit(
                    command.line,
                    command.col,
                    f"`{command.name} -f {pattern}` matches this script's own name "
                    f"({script_name}), so it finds (or kills) the script itself",
                    pattern=pattern,
                )


def _bracketed(pattern: str) -> str:
    for index, char in enumerate(pattern):
        if char.isalnum():
            return f"{pattern[:index]}[{char}]{pattern[index + 1 :]}"
    return pattern


_NOT_LAUNCHES = frozenset({"cd", "export", "echo", "printf", "source", ".", "sleep", "true"})


def _kills_own_shell(command: Command, current: ShellScript, outer: Command) -> bool:
    """A `pkill -f PATTERN` whose pattern is in the command line of the shell running it."""
    if command.name != "pkill":
        return False
    pattern = _pattern(command)
    if pattern is None:
        return False
    pattern = _with_arguments(pattern, _script_arguments_of(current))
    return _matches(pattern, text(outer.node))


def _kill_relaunch_hits(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        outer = current.outer
        if outer is None or outer.name != "ssh":
            continue
        if not current.has_command(PROCESS_MATCHERS):
            continue  # nothing can kill the shell that would run the relaunch
        killed_at: Command | None = None
        for command in current.commands():
            if killed_at is None:
                if _kills_own_shell(command, current, outer):
                    killed_at = command
                continue
            launches = command.name in LAUNCHERS or command.backgrounded()
            if launches and command.name not in _NOT_LAUNCHES:
                yield hit(
                    outer.line,
                    outer.col,
                    f"this ssh command's `pkill -f` matches the remote shell running it, so "
                    f"the relaunch after it (`{command.name}`) never runs; use two ssh calls",
                    killer=killed_at.name,
                    launcher=command.name,
                )
                break


SELF_MATCH = shell_check(SELF_MATCH_RULE, _self_match_hits)
KILL_RELAUNCH = shell_check(KILL_RELAUNCH_RULE, _kill_relaunch_hits)

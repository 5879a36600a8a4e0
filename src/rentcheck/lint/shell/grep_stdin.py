"""RC105 grep-pattern-pipe-unquoted: a grep that ends up reading stdin and waits forever."""

from __future__ import annotations

from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import Command, ShellScript

RULE = Rule(
    code="RC105",
    name="grep-pattern-pipe-unquoted",
    family="shell",
    summary="grep pattern with an unquoted `|`, or a grep with no file that reads stdin in a loop",
    why=(
        "`grep step=|loss= train.log` is not an alternation: the shell cuts it at the `|` "
        "into `grep step=`, which has no file and reads standard input, piped into "
        "`loss= train.log`, which runs train.log as a command. In a terminal or tmux that "
        "input never ends, so the monitor hangs silently; in a job started with `&`, nohup "
        "or sbatch it is empty, so the grep never matches and the watcher reports nothing. "
        "In a `while` poll loop the same happens to any grep given no file. Quote the "
        "pattern and always name the file."
    ),
    example_bad="while ! grep -q done|finished train.log; do sleep 30; done",
    example_good="while ! grep -qE 'done|finished' train.log; do sleep 30; done",
    fix="Quote the pattern (`grep -E 'a|b' FILE`) and give grep the file it should read.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

GREPS = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg"})
_WITH_VALUE = frozenset(
    {
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "--regexp",
        "--file",
        "--max-count",
        "--context",
        "--after-context",
        "--before-context",
        "--label",
        "--color",
        "--colour",
        "-d",
        "-D",
    }
)
# Commands people really pipe grep output into: a second stage named like these is a pipe
# the author meant, not a pattern the shell split.
FILTERS = frozenset(
    {
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "awk",
        "sed",
        "cut",
        "tr",
        "grep",
        "egrep",
        "xargs",
        "tee",
        "less",
        "more",
        "cat",
        "jq",
        "python",
        "python3",
        "perl",
        "column",
        "nl",
        "tac",
        "rev",
        "fold",
        "paste",
        "read",
        "while",
        "mail",
        "logger",
        "sh",
        "bash",
        "gzip",
        "zcat",
    }
)


def operands(command: Command) -> tuple[bool, list[str]]:
    """(pattern given by option, positional operands) of a grep command."""
    argv = command.argv
    positional: list[str] = []
    pattern_by_option = False
    skip = False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--":
            positional.extend(argv[index + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            name = arg.split("=", 1)[0]
            if name in ("-e", "--regexp", "-f", "--file") or (
                len(arg) > 2 and arg[1] != "-" and arg[-1] in "ef"
            ):
                pattern_by_option = True
            if name in _WITH_VALUE and "=" not in arg:
                skip = True
            elif len(arg) > 2 and arg[1] != "-" and arg[-1] in "efmABCdD":
                skip = True  # -qe PATTERN, -m1 is attached but -m 1 is not
            continue
        positional.append(arg)
    return pattern_by_option, positional


def _reads_stdin(command: Command) -> bool:
    by_option, positional = operands(command)
    files = positional if by_option else positional[1:]
    recursive = any(
        a in ("-r", "-R", "--recursive")
        or (a.startswith("-") and not a.startswith("--") and ("r" in a[1:] or "R" in a[1:]))
        for a in command.argv
    )
    return not files and not recursive and not command.stdin_redirected()


_LOOP_TYPES = ("while_statement", "for_statement", "c_style_for_statement")  # until: while


def _in_poll_loop(command: Command) -> bool:
    return command.script.within_any(command.node, _LOOP_TYPES)


def _split_pattern(command: Command) -> str | None:
    """The next pipeline stage's text when it looks like the rest of a split pattern."""
    statement = command.node
    while statement.parent is not None and statement.parent.type == "redirected_statement":
        statement = statement.parent
    pipeline = statement.parent
    if pipeline is None or pipeline.type != "pipeline":
        return None
    stages = [c for c in pipeline.children if c.type not in ("|", "|&")]
    if stages[0] != statement or len(stages) < 2:
        return None
    nxt = stages[1]
    node = (
        nxt
        if nxt.type == "command"
        else next((c for c in nxt.children if c.type == "command"), None)
    )
    if node is None:
        return None
    second = command.script._command(node)
    if second.name in FILTERS or not second.name or second.name.startswith(("/", "./")):
        return None
    # `grep a|b file`: "b" runs as a command, or `b= file` as an assignment before one, and
    # takes the file the grep should have read.
    if second.args or second.env:
        return text(node)
    return None


def _run(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        for command in current.commands_named(GREPS):
            rest = _split_pattern(command)
            if rest is not None and _reads_stdin(command):
                head = " ".join(command.argv[-1:])
                tail, _, files = rest.partition(" ")
                yield hit(
                    command.line,
                    command.col,
                    f"pattern `{head}|{tail}` was split at an unquoted `|`: grep gets no file "
                    f"and reads stdin, `{tail}` runs as a command; quote it: "
                    f"grep -E '{head}|{tail}' {files}".rstrip(),
                    pattern=f"{head}|{tail}",
                )
            elif _in_poll_loop(command) and not command.reads_pipe() and _reads_stdin(command):
                yield hit(
                    command.line,
                    command.col,
                    "grep inside a poll loop has no file operand and reads stdin, which never "
                    "ends under nohup/tmux: name the file it should search",
                )


CHECK = shell_check(RULE, _run)

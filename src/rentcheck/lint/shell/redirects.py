"""Where a command's output goes, and what an ssh command runs on the far side: read from the
command's words and redirects, without the parser glue (see ``words``)."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.tree import Command

__all__ = ["INHERITED", "PIPE", "output_destinations", "ssh_options", "ssh_remote_words"]

INHERITED = "inherited"  # the launching shell's own stdout/stderr (a terminal, an ssh session)
PIPE = "pipe"
_REDIRECT = re.compile(r"^(\d*|&)(>>|>\||>&|>|<&|<<<|<<-|<<|<>|<)\s*(.*)$", re.DOTALL)

# ssh options that take a value (OpenSSH ssh(1) synopsis).
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def output_destinations(command: Command) -> tuple[str, str]:
    """Where the command's stdout and stderr end up: a file name, PIPE, or INHERITED."""
    fds = {1: INHERITED, 2: INHERITED}
    if command.writes_pipe():
        fds[1] = PIPE
    for redirect in command.redirects():
        match = _REDIRECT.match(redirect.strip())
        if match is None:
            continue
        fd_text, operator, target = match.groups()
        if operator.startswith("<"):
            continue
        target = target.strip().strip("'\"")
        if fd_text == "&" or (operator == ">&" and not target.isdigit() and target != "-"):
            fds[1] = fds[2] = target  # &>file, >&file: both
            continue
        fd = int(fd_text) if fd_text else 1
        if fd not in fds:
            continue
        if operator == ">&":
            fds[fd] = fds.get(int(target), INHERITED) if target.isdigit() else "closed"
        else:
            fds[fd] = target
    return fds[1], fds[2]


def ssh_options(argv: list[str]) -> tuple[set[str], list[str]]:
    """The single-letter flags given to ssh, and the words after its options (destination
    first, then the remote command)."""
    flags: set[str] = set()
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return flags, argv[index + 1 :]
        if not word.startswith("-") or len(word) < 2:
            break
        for position, letter in enumerate(word[1:], start=1):
            flags.add(letter)
            if letter in _SSH_VALUED:
                if position == len(word) - 1:
                    index += 1  # the value is the next word
                break
        index += 1
    return flags, argv[index:]


def ssh_remote_words(command: Command) -> list[str]:
    """The remote command's words of an ``ssh`` command (empty: a login shell reads stdin)."""
    return ssh_options(command.argv)[1][1:]

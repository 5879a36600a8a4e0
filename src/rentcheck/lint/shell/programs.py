"""Which commands start a long-running program: a trainer, a launcher, a nested script.

Shared by the rules that care whether a script is still running (and so still being read by
bash) minutes or hours after it started. Reads only command names and words."""

from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.tree import Command

__all__ = ["is_long_running", "may_be_long_running"]

_LONG_RUNNING = re.compile(
    r"^(python[\d.]*|torchrun|accelerate|deepspeed|srun|mpirun|horovodrun|ray|sleep|wait|"
    r"rsync|tail)$"
)
_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
# `"$PY" -m train`, `$PYTHON train.py`, `${TORCHRUN} …`: an interpreter held in a variable.
_INTERPRETER_VARIABLE = re.compile(r"^\$\{?[A-Za-z_]*(PY|PYTHON|TORCHRUN|LAUNCHER|DEEPSPEED)")


@lru_cache(maxsize=4096)
def may_be_long_running(name: str) -> bool:
    """Decided from the name alone: whether the command can be one (cheap, cached)."""
    return (
        _LONG_RUNNING.match(name) is not None
        or name in _SHELLS
        or name.startswith("$")
        or name.endswith(".sh")
    )


# A quick question to an interpreter, not a run: `python -c '…'`, `python --version`.
_QUICK_FLAGS = frozenset({"-c", "-V", "--version", "-h", "--help"})


def is_long_running(command: Command) -> bool:
    name = command.name
    if _LONG_RUNNING.match(name) is not None:
        if name.startswith("python"):
            argv = command.argv
            return not (argv and argv[0] in _QUICK_FLAGS) and argv[:2] != ["-m", "pip"]
        return name != "tail" or "-f" in command.argv or "-F" in command.argv
    argv = command.argv
    if name in _SHELLS:
        # `bash "$X"`, `bash train.sh`: another script that runs as long as it does.
        return (bool(argv) and not argv[0].startswith("-")) or "-s" in argv
    if name.endswith(".sh"):
        return True
    if name.startswith("$"):
        upper = name.upper()
        if _INTERPRETER_VARIABLE.match(upper) is not None:
            return True
        return bool(argv) and (argv[0] in ("-m", "-u") or argv[0].endswith(".py"))
    return False

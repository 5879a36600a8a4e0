"""Which Python ``python`` (and ``{python}``) means in a smoke or resume command.

The project's interpreter, not rentcheck's: rentcheck may live in a pipx or tool env without
torch. In order: the config's ``python``, the active virtualenv (``$VIRTUAL_ENV``), the active
conda env (``$CONDA_PREFIX``), the project's own ``.venv``/``venv``, then ``python`` /
``python3`` on ``PATH``, and only then the interpreter running rentcheck.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BARE_NAMES", "Interpreter", "find_interpreter"]

# A command starting with one of these runs the project's interpreter.
BARE_NAMES = ("python", "python3")


@dataclass(frozen=True)
class Interpreter:
    path: str
    source: str  # where it came from, in words, for the report
    bin_dir: str | None = None  # an environment's bin dir to put first on PATH (as `activate`)


def _env_python(prefix: str) -> str | None:
    for name in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        candidate = os.path.join(prefix, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def find_interpreter(
    root: str, configured: str | None = None, environ: Mapping[str, str] | None = None
) -> Interpreter | str:
    """The interpreter, or a one-line problem when the configured one does not exist."""
    env = os.environ if environ is None else environ
    if configured:
        on_path = shutil.which(configured, path=env.get("PATH"))
        path = configured if os.sep in configured else on_path
        if path and not os.path.isabs(path):
            path = os.path.join(root, path)
        if not path or not os.path.isfile(path):
            return f"{configured!r} is not an interpreter that exists"
        return Interpreter(path, "the config's `python`")
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable)
        found = _env_python(prefix) if prefix else None
        if prefix and found:
            source = f"the active environment, ${variable}"
            return Interpreter(found, source, os.path.dirname(found))
    for name in (".venv", "venv"):
        found = _env_python(os.path.join(root, name))
        if found:
            return Interpreter(found, f"the project's {name}", os.path.dirname(found))
    for name in BARE_NAMES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return Interpreter(found, f"`{name}` on PATH")
    return Interpreter(sys.executable, "the interpreter running rentcheck")

"""Training entrypoints by what they are: a script (a ``__main__`` block or top-level code) that
imports torch or a trainer framework and trains (an optimizer, ``backward``, a ``Trainer``,
``.fit(``, ``train(``). Ranked by that evidence; each says why.

Only files that exist are returned, so a command is never written for a missing file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["Candidate", "find_entrypoints", "read_text"]

MAX_DEPTH = 4
MAX_FILES = 3000
_SKIP_DIRS = {".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".rentcheck",
              "site-packages", "build", "dist", "docs", "doc", "tests", "test", ".tox"}  # fmt: skip
_SKIP_FILES = re.compile(r"^(test_.*|.*_test|conftest|setup|__init__|noxfile|fabfile)\.py$")
_NAME_HINT = re.compile(r"(train|main|run|pretrain|finetune|fit)", re.I)

_MAIN = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.M)
# Module-level code that runs the script: parsing its args or looping over epochs at column 0.
_SCRIPT = re.compile(
    r"^(?:\w+\s*=\s*)?\w+\.parse_args\(|^(?:for|while)\b[^\n]*(?:epoch|step|iter)", re.M
)
_TORCH = re.compile(
    r"^\s*(?:import|from)\s+(torch|lightning|pytorch_lightning|transformers|accelerate)\b", re.M
)
# (pattern, points, reason)
_EVIDENCE: tuple[tuple[re.Pattern[str], int, str], ...] = (
    (re.compile(r"\btorch\.optim\.\w+\(|\boptim\.\w+\(|configure_optimizers|Optimizer\b"), 2,
     "builds an optimizer"),
    (re.compile(r"\.backward\("), 2, "calls backward()"),
    (re.compile(r"\.data\.add_\(|\.data\.sub_\("), 1, "updates parameters by hand"),
    (re.compile(r"\bTrainer\(|\.fit\(|\btrainer\.train\(|\bLightningCLI\("), 3,
     "runs a Trainer / fit"),
    (re.compile(r"^\s*(?:def\s+)?train\w*\(", re.M), 1, "has a train() function or call"),
    (re.compile(r"argparse|HfArgumentParser|LightningCLI|@hydra\.main|merge_from_args|fire\.Fire"),
     1, "takes command-line arguments"),
)  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    path: str  # relative to the project root, "/"-separated; the file exists
    score: float
    reasons: tuple[str, ...]
    text: str = field(repr=False, compare=False)

    @property
    def is_script(self) -> bool:
        return bool(_MAIN.search(self.text) or _SCRIPT.search(self.text))

    def why(self) -> str:
        return ", ".join(self.reasons)


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(512 * 1024)
    except OSError:
        return ""


def python_files(root: str) -> list[str]:
    """Project .py files (relative, "/"-separated), shallow first, tests and envs skipped."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(directory, root)
        depth = 0 if rel == os.curdir else rel.count(os.sep) + 1
        if depth >= MAX_DEPTH:
            dirs[:] = []
        for name in sorted(files):
            if name.endswith(".py") and not _SKIP_FILES.match(name):
                path = name if rel == os.curdir else f"{rel.replace(os.sep, '/')}/{name}"
                found.append(path)
        if len(found) >= MAX_FILES:
            break
    return found


def judge_file(path: str, text: str) -> Candidate | None:
    """A candidate when the file imports torch (or a trainer framework) and is a script or is
    named like one; None for library modules and files without torch."""
    imported = _TORCH.search(text)
    if not imported:
        return None
    name = os.path.basename(path)
    script = bool(_MAIN.search(text)) or bool(_SCRIPT.search(text))
    hinted = bool(_NAME_HINT.search(name))
    if not script and not hinted:
        return None
    reasons = [f"imports {imported.group(1)}"]
    score = 1.0
    if _MAIN.search(text):
        score, reasons = score + 4, [*reasons, "has a __main__ block"]
    elif script:
        score, reasons = score + 4, [*reasons, "runs as a script (top-level code)"]
    else:
        reasons.append("no __main__ block (a library module?)")
    for pattern, points, reason in _EVIDENCE:
        if pattern.search(text):
            score, reasons = score + points, [*reasons, reason]
    if hinted:
        score, reasons = score + 1, [*reasons, f"named {name}"]
    score -= 0.5 * path.count("/")  # the shallower of two equals is the one people run
    return Candidate(path, score, tuple(reasons), text)


def find_entrypoints(root: str, files: list[str] | None = None) -> list[Candidate]:
    """Every training entrypoint candidate, best first (ties: shallower, then by name)."""
    found = []
    for path in files if files is not None else python_files(root):
        candidate = judge_file(path, read_text(os.path.join(root, path)))
        if candidate is not None:
            found.append(candidate)
    return sorted(found, key=lambda c: (-c.score, c.path.count("/"), c.path))

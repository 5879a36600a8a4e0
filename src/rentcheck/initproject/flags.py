"""What the chosen entrypoint takes and writes, read from its source: its own steps flag
(argparse, or a ``--section.key=value`` config system like minGPT's ``merge_from_args``), the
checkpoint directory its code writes, and untracked (gitignored) data it reads."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Proposal", "checkpoint_dir", "data_links", "steps_proposal"]

_ADD_ARGUMENT = re.compile(r"add_argument\(\s*['\"](--[\w.-]+)['\"](?P<rest>[^)]*)\)", re.S)
_STEPS = re.compile(
    r"^--(?:max[-_]?(?:steps|iters?|iterations)|(?:num|total|train)[-_]?(?:steps|iters?)|"
    r"steps|iters?|n[-_]?iters?)$"
)
_EPOCHS = re.compile(r"^--(?:n(?:um)?[-_]?)?(?:train[-_]?)?epochs?$")
_EVERY = re.compile(
    r"^--(?:ckpt|save|checkpoint|eval)[-_]?(?:every|interval|steps|freq(?:uency)?)$"
)
_CKPT = re.compile(
    r"^--(?:save|ckpt|checkpoint)(?:[-_]?(?:dir|path|folder))?$|"
    r"^--(?:out|output|work|checkpoints?)[-_]?(?:dir|path|folder)$"
)
_DEFAULT = re.compile(r"default\s*=\s*(?:\w+\()?['\"]([^'\"]+)['\"]")
# work_dir (minGPT), ModelCheckpoint(dirpath=...), Trainer(default_root_dir=...), out_dir (nanoGPT)
_DIR_ASSIGNMENT = re.compile(
    r"\b(work_dir|dirpath|default_root_dir|out_dir|output_dir|checkpoint_dir|ckpt_dir)"
    r"\s*=\s*['\"]([^'\"]+)['\"]"
)
_FILE_SUFFIX = re.compile(r"\.(?:pt|pth|ckpt|bin|safetensors|tar|pkl)$")


@dataclass(frozen=True)
class Proposal:
    args: tuple[str, ...]  # appended to the command; {steps} / {checkpoint_every} templates
    why: str


def _flags(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group("rest")) for m in _ADD_ARGUMENT.finditer(text)]


def steps_proposal(text: str, sources: Sequence[tuple[str, str]] = ()) -> Proposal | None:
    """The repo's own way to limit the run: a steps flag ({steps}), else an epochs flag (1:
    rentcheck's shim stops it after `steps`), else a config-system key. ``sources`` are the
    other project files (path, text), where a config system's defaults live."""
    flags = _flags(text)
    steps = next((f for f, _ in flags if _STEPS.match(f)), None)
    if steps:
        return Proposal((steps, "{steps}"), f"its argparse flag {steps}")
    sections = dict(
        (cls, section)
        for section, cls in re.findall(r"\bC\.(\w+)\s*=\s*(\w+)\.get_default_config\(\)", text)
    )
    if "merge_from_args" in text and sections:
        for path, source in sources:
            keys = re.findall(r"\bC\.(max_iters|max_steps|num_steps|max_epochs)\s*=", source)
            owners = [c for c in re.findall(r"^class\s+(\w+)", source, re.M) if c in sections]
            if keys and owners:
                flag = f"--{sections[owners[0]]}.{keys[0]}"
                why = f"its config system (merge_from_args; {keys[0]} in {path})"
                return Proposal((f"{flag}={{steps}}",), why)
    epochs = next((f for f, _ in flags if _EPOCHS.match(f)), None)
    if epochs:
        why = f"its argparse flag {epochs} (one epoch; rentcheck's shim stops it after `steps`)"
        return Proposal((epochs, "1"), why)
    return None


def every_flag(text: str) -> str | None:
    return next((f for f, _ in _flags(text) if _EVERY.match(f)), None)


def checkpoint_dir(text: str, sources: Sequence[tuple[str, str]] = ()) -> tuple[str, str] | None:
    """(directory relative to where the run starts, why) the code writes checkpoints to."""
    for flag, rest in _flags(text):
        default = _DEFAULT.search(rest)
        if _CKPT.match(flag) and default:
            value = default.group(1)
            if _FILE_SUFFIX.search(value):
                return _clean(os.path.dirname(value)), f"the default of {flag} ({value})"
            return _clean(value), f"the default of {flag}"
    for path, source in [("the entrypoint", text), *sources]:
        match = _DIR_ASSIGNMENT.search(source)
        if match:
            return _clean(match.group(2)), f"{match.group(1)} in {path}"
    match = re.search(r"torch\.save\([^\n]*?['\"]([^'\"]+\.(?:pt|pth|ckpt|bin))['\"]", text)
    if match:
        return _clean(os.path.dirname(match.group(1))), "a torch.save(...) path in the code"
    return None


def _clean(path: str) -> str:
    path = os.path.normpath(path or ".").replace(os.sep, "/")
    return path


def ignored_paths(root: str) -> list[str]:
    """Top-level paths git ignores here (data dirs, downloads); [] outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--others", "--ignored", "--exclude-standard",
             "--directory", "--no-empty-directory"],
            capture_output=True, text=True, timeout=20, check=False,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    tops = {line.strip().rstrip("/").split("/")[0] for line in out.splitlines() if line.strip()}
    skip = {"__pycache__", ".venv", "venv", ".rentcheck", "rentcheck.yaml"}
    return sorted(t for t in tops if t and t not in skip and not t.endswith((".pyc", ".egg-info")))


def data_links(root: str, texts: Sequence[str]) -> list[tuple[str, str]]:
    """(path, why) for each ignored path that exists and that the code names: the scratch
    copy of the project would lack it, `link` makes the copy see it."""
    links = []
    for path in ignored_paths(root):
        if not os.path.exists(os.path.join(root, path)):
            continue
        named = re.compile(rf"['\"/](?:\./)?{re.escape(path)}(?:['\"/])")
        if any(named.search(text) for text in texts):
            links.append((path, "ignored by git, read by the code"))
    return links

"""``rentcheck init``: a starter ``rentcheck.yaml`` for the project it finds, every key explained.

It looks for the training entrypoint (``train.py`` and friends), reads it (never runs it) to
guess the framework (plain PyTorch, Lightning, LightningCLI, transformers' Trainer, ...), the
flag that limits the run's steps and the checkpoint directory, and fills the smoke and resume
sections from that. An existing config is never replaced unless ``--force`` says so.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

from rentcheck.errors import UsageError

__all__ = ["Detected", "detect", "starter_config"]

CONFIG_NAME = "rentcheck.yaml"
_ENTRY_NAMES = ("train.py", "main.py", "run.py", "pretrain.py", "finetune.py", "fit.py")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".rentcheck", "site-packages"}
_STEP_FLAGS = ("--max-steps", "--max_steps", "--steps", "--num-steps", "--num_steps",
               "--total-steps", "--total_steps", "--train-steps", "--train_steps")  # fmt: skip
_EVERY_FLAGS = ("--ckpt-every", "--ckpt_every", "--save-every", "--save_every",
                "--checkpoint-every", "--checkpoint_every",
                "--save-steps", "--save_steps")  # fmt: skip
_CKPT_FLAGS = ("--ckpt-dir", "--checkpoint-dir", "--checkpoint_dir", "--ckpt_dir",
               "--save-dir", "--save_dir", "--output-dir", "--output_dir")  # fmt: skip


@dataclass(frozen=True)
class Detected:
    """What ``init`` found, each with the reason shown to the person."""

    entrypoint: str | None
    framework: str  # in words
    preset: str | None
    steps_flag: str | None
    every_flag: str | None  # the checkpoint interval's flag
    ckpt_flag: str | None
    ckpt_dir: str | None


def _candidates(root: str) -> list[str]:
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        depth = os.path.relpath(directory, root).count(os.sep)
        if depth > 3:
            dirs[:] = []
            continue
        for name in files:
            if name in _ENTRY_NAMES or (name.startswith("train") and name.endswith(".py")):
                found.append(os.path.relpath(os.path.join(directory, name), root))
    # The shallowest first, then train.py before the other names.
    order = {name: i for i, name in enumerate(_ENTRY_NAMES)}
    return sorted(found, key=lambda p: (p.count(os.sep), order.get(os.path.basename(p), 99), p))


def _read(root: str, relpath: str) -> str:
    try:
        with open(os.path.join(root, relpath), encoding="utf-8", errors="replace") as handle:
            return handle.read(512 * 1024)
    except OSError:
        return ""


def _framework(text: str) -> tuple[str, str | None]:
    if re.search(r"\bLightningCLI\b", text):
        return "LightningCLI", "lightning-cli"
    if re.search(r"^\s*import hydra|^\s*from hydra\b|@hydra\.main", text, re.M) and (
        "lightning" in text
    ):
        return "Lightning with Hydra", "lightning-hydra"
    if re.search(
        r"\b(pytorch_lightning|lightning)\b.*\bTrainer\b|\bL\.Trainer\b|\bpl\.Trainer\b", text, re.S
    ):
        return "Lightning Trainer", None
    if re.search(r"\bfrom transformers\b.*\bTrainer\b", text, re.S):
        if "HfArgumentParser" in text:
            return "transformers Trainer (HfArgumentParser)", "hf-trainer"
        return "transformers Trainer (own argparse flags)", "hf-trainer-argparse"
    if "torchtitan" in text:
        return "torchtitan", "torchtitan"
    if "composer" in text and re.search(r"\bfrom composer\b", text):
        return "Composer", "composer"
    if re.search(r"\baccelerate\b", text):
        return "PyTorch with accelerate", None
    if re.search(r"^\s*(import torch|from torch\b)", text, re.M):
        return "plain PyTorch", None
    return "no torch import found", None


def _flag(text: str, flags: tuple[str, ...]) -> str | None:
    return next((f for f in flags if re.search(rf"['\"]{re.escape(f)}['\"]", text)), None)


def _default_of(text: str, flag: str | None) -> str | None:
    """The ``default=`` of an argparse flag, when it is a plain string literal."""
    if flag is None:
        return None
    match = re.search(
        rf"['\"]{re.escape(flag)}['\"][^)]*?default\s*=\s*['\"]([^'\"]+)['\"]", text, re.S
    )
    return match.group(1) if match else None


def detect(root: str) -> Detected:
    candidates = _candidates(root)
    entry = candidates[0] if candidates else None
    text = _read(root, entry) if entry else ""
    framework, preset = _framework(text) if entry else ("no entrypoint found", None)
    steps = None if preset else _flag(text, _STEP_FLAGS)
    every = None if preset else _flag(text, _EVERY_FLAGS)
    ckpt = _flag(text, _CKPT_FLAGS)
    return Detected(entry, framework, preset, steps, every, ckpt, _default_of(text, ckpt))


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def starter_config(found: Detected) -> str:
    """The YAML text: every key with a comment saying what it does and what to change."""
    entry = found.entrypoint or "train.py"
    command = f"python {entry}"
    ckpt_dir = found.ckpt_dir or "checkpoints"
    smoke = [found.steps_flag, "{steps}"] if found.steps_flag else []
    resume = list(smoke)
    if found.every_flag:  # checkpoints within the smoke steps too, and a third of resume's
        smoke += [found.every_flag, "1"]
        resume += [found.every_flag, "{checkpoint_every}"]
    if found.ckpt_flag and not found.ckpt_dir:
        resume += [found.ckpt_flag, ckpt_dir]
    smoke_args, resume_args = (f"[{', '.join(_q(a) for a in args)}]" for args in (smoke, resume))
    preset = (
        f"  preset: {found.preset}  # detected {found.framework}: the preset adds its flags\n"
        if found.preset
        else f"  # preset: none needed for {found.framework} (`rentcheck smoke --list-presets`)\n"
    )
    steps_note = (
        f"  # {found.steps_flag} {{steps}} limits the run; without such a flag the step counter\n"
        "  # (rentcheck's shim, loaded into the run) stops it after `steps` steps\n"
        if found.steps_flag
        else "  # no steps flag was found: the step counter (rentcheck's shim, loaded into the\n"
        "  # run) stops it after `steps` optimizer steps; add your flag here if you have one\n"
    )
    where = found.entrypoint or "(none found: write your training command below)"
    return f"""\
# rentcheck settings, written by `rentcheck init` for this project.
# Found: entrypoint {where}; framework: {found.framework}.
# Every key is explained; `rentcheck config` shows the effective values, defaults included.
# Rules: `rentcheck rules`, one rule: `rentcheck rule CODE` (pages in docs/rules/).

# --- lint (`rentcheck check`): shell, Python and config hygiene -------------------------
# The rules that run: "ALL" is every stable rule; a family prefix ("RC1") or codes work too.
select: ["ALL"]
# Rules to switch off for the whole project, e.g. ["RC103"].
ignore: []
# The lowest severity that fails a gate (exit 1): note | warning | error.
fail-level: warning

python:
  # Where the Python rules look for training code (globs; default: every .py file).
  training-paths: [{_q(entry)}]

# --- smoke (`rentcheck smoke`): the real entrypoint, a few optimizer steps on CPU --------
smoke:
  # The command as you type it; it runs in a scratch copy of this project, with the
  # project's interpreter for `python` (its `python` key, else the active virtualenv).
  command: {_q(command)}
  # Appended to the command for the smoke run; {{steps}} becomes `steps`.
{steps_note}  args: {smoke_args}
  # How many optimizer steps the run must reach on CPU.
  steps: 2
  # Seconds before the run counts as hung.
  timeout: 300
  # Trackers and hub downloads off (WANDB_MODE=offline, HF_HUB_OFFLINE=1, ...).
  offline: true
{preset}
# --- resume (`rentcheck resume`): killed at step k, the identical command continues -------
resume:
  # Inherits smoke's command, preset, timeout and offline; its own args and steps:
  args: {resume_args}
  # Steps of the uninterrupted reference run; the kills land between its checkpoints.
  steps: 12
  # Where the run writes checkpoints, relative to where it starts (optional: rentcheck also
  # sees every torch.save / safetensors save the run makes).
  checkpoint-dir: {_q(ckpt_dir)}
  # exact: every loss and the final weights equal the uninterrupted run's (deterministic
  # loops); continues: it resumes from the newest checkpoint + 1 (shuffled, mid-epoch).
  mode: {"continues" if found.preset else "exact"}

# --- audit (`rentcheck audit --host BOX`): the rented box, before launch -----------------
# audit:
#   profile: autodl             # the platform (`rentcheck profiles`): which disk survives
#   paths:                      # what the run writes where, on the box
#     data: /root/autodl-tmp
#     checkpoint: /root/autodl-fs/ckpt
#   budget:                     # free space each path needs: checkpoint x keep + scratch
#     checkpoint_bytes: 2GiB
#     keep: 3
#     scratch_bytes: 20GiB
#   python: /root/miniconda3/bin/python   # the project's interpreter on the box
"""


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    p = sub.add_parser(
        "init",
        help="write a starter rentcheck.yaml for this project (entrypoint, framework, smoke)",
        description="Find the training entrypoint, guess the framework from its imports (the "
        "file is read, never run) and write rentcheck.yaml with the lint, smoke and resume "
        "sections filled and every key explained. Exit 0 written, 2 if a config exists.",
    )
    p.add_argument("directory", nargs="?", default=".", help="the project (default: .)")
    p.add_argument("--force", action="store_true", help="replace an existing rentcheck.yaml")
    p.add_argument("--stdout", action="store_true", help="print the config instead of writing")
    p.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    from rentcheck.atomic import write_atomic

    root = os.path.abspath(args.directory)
    if not os.path.isdir(root):
        raise UsageError(f"{args.directory} is not a directory", hint="rentcheck init [DIR]")
    found = detect(root)
    text = starter_config(found)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    target = os.path.join(root, CONFIG_NAME)
    if os.path.exists(target) and not args.force:
        raise UsageError(
            f"{target} exists; nothing was written",
            hint="rentcheck init --stdout shows the starter, --force replaces the file",
        )
    if _has_pyproject_table(root) and not args.force:
        raise UsageError(
            f"{os.path.join(root, 'pyproject.toml')} already has [tool.rentcheck]; nothing "
            "was written",
            hint="rentcheck init --stdout shows the starter to merge by hand",
        )
    write_atomic(target, text.encode("utf-8"))
    sys.stderr.write(
        f"rentcheck: wrote {target} (entrypoint: {found.entrypoint or 'none found'}; "
        f"framework: {found.framework})\nnext: rentcheck check && rentcheck smoke\n"
    )
    return 0


def _has_pyproject_table(root: str) -> bool:
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as handle:
            return re.search(r"^\[tool\.rentcheck(\.|\])", handle.read(), re.M) is not None
    except OSError:
        return False

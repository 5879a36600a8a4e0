"""``rentcheck init``: a starter ``rentcheck.yaml`` for the project it finds, every key explained.

It ranks the project's training entrypoints by what they are (``initproject/``: a script that
imports torch and trains), reads the best one (never runs it) to guess the framework (plain
PyTorch, Lightning, LightningCLI, transformers' Trainer, ...), the repo's own flag that limits
the run's steps, the checkpoint directory its code writes and the gitignored data it reads,
and fills the smoke and resume sections from that, each choice with its reason. An existing
config is never replaced unless ``--force`` says so.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

from rentcheck.errors import UsageError
from rentcheck.initproject.entrypoints import Candidate, find_entrypoints, python_files, read_text
from rentcheck.initproject.flags import checkpoint_dir, data_links, every_flag, steps_proposal

__all__ = ["Detected", "detect", "starter_config"]

CONFIG_NAME = "rentcheck.yaml"
_CKPT_FLAGS = ("--ckpt-dir", "--checkpoint-dir", "--checkpoint_dir", "--ckpt_dir",
               "--save-dir", "--save_dir", "--output-dir", "--output_dir")  # fmt: skip
_MAX_SOURCES = 300  # project files read for a config system's defaults


@dataclass(frozen=True)
class Detected:
    """What ``init`` found, each with the reason shown to the person."""

    entrypoint: str | None  # an existing file, relative to the project
    framework: str  # in words
    preset: str | None
    steps_flag: str | None  # the first word of ``steps_args`` (kept for callers)
    every_flag: str | None  # the checkpoint interval's flag
    ckpt_flag: str | None
    ckpt_dir: str | None
    candidates: tuple[Candidate, ...] = ()  # ranked; the first is the entrypoint
    steps_args: tuple[str, ...] = ()  # the repo's own way to limit steps
    steps_why: str = ""
    ckpt_why: str = ""
    links: tuple[tuple[str, str], ...] = ()  # (ignored path the code reads, why)


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


def detect(root: str, entrypoint: str | None = None) -> Detected:
    """``entrypoint``: the file to use (relative to ``root``), ranked first when it exists."""
    files = python_files(root)
    candidates = find_entrypoints(root, files)
    if entrypoint is not None:
        wanted = os.path.normpath(entrypoint).replace(os.sep, "/")
        if not os.path.isfile(os.path.join(root, wanted)):
            raise UsageError(f"--entrypoint {entrypoint}: no such file in {root}")
        chosen = next((c for c in candidates if c.path == wanted), None)
        if chosen is None:
            text = read_text(os.path.join(root, wanted))
            chosen = Candidate(wanted, 0.0, ("named with --entrypoint",), text)
        candidates = [chosen, *(c for c in candidates if c.path != wanted)]
    if not candidates:
        return Detected(None, "no entrypoint found", None, None, None, None, None)
    entry = candidates[0]
    text = entry.text
    framework, preset = _framework(text)
    sources = [
        (path, read_text(os.path.join(root, path)))
        for path in files[:_MAX_SOURCES]
        if path != entry.path
    ]
    proposal = None if preset else steps_proposal(text, sources)
    every = None if preset else every_flag(text)
    ckpt_flag = _flag(text, _CKPT_FLAGS)
    if preset == "hf-trainer":
        found_dir: tuple[str, str] | None = ("out", "the preset's --output_dir out")
    else:
        found_dir = checkpoint_dir(text, sources)
    return Detected(
        entrypoint=entry.path,
        framework=framework,
        preset=preset,
        steps_flag=proposal.args[0].split("=")[0] if proposal else None,
        every_flag=every,
        ckpt_flag=ckpt_flag,
        ckpt_dir=found_dir[0] if found_dir else None,
        candidates=tuple(candidates),
        steps_args=proposal.args if proposal else (),
        steps_why=proposal.why if proposal else "",
        ckpt_why=found_dir[1] if found_dir else "",
        links=tuple(data_links(root, [text])),
    )


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _found_lines(found: Detected) -> str:
    """Comment lines: each candidate with the evidence that ranked it."""
    if not found.candidates:
        return (
            "# No training entrypoint found (a script that imports torch or a trainer framework\n"
            "# and trains); write your training command under smoke: command.\n"
        )
    lines = [f"# Entrypoint: {found.entrypoint} ({found.candidates[0].why()})."]
    lines += [f"# Also found: {c.path} ({c.why()})." for c in found.candidates[1:4]]
    lines.append(f"# Framework: {found.framework}.")
    return "".join(f"{line}\n" for line in lines)


def starter_config(found: Detected) -> str:
    """The YAML text: every key with a comment saying what it does and what to change."""
    entry = found.entrypoint
    if entry is not None:
        command_line = f"  command: {_q(f'python {entry}')}\n"
        paths_line = (
            "python:\n"
            "  # Where the Python rules look for training code (globs; default: every .py file).\n"
            f"  training-paths: [{_q(entry)}]\n"
        )
    else:  # never a command for a file that does not exist: the gates ask for one
        command_line = '  # command: "python path/to/your_training_script.py"\n'
        paths_line = (
            "# Where the Python rules look for training code (default: every .py file):\n"
            "# python:\n"
            '#   training-paths: ["path/to/your_training_script.py"]\n'
        )
    smoke = list(found.steps_args)
    resume = list(smoke)
    if found.every_flag:  # checkpoints within the smoke steps too, and a third of resume's
        smoke += [found.every_flag, "1"]
        resume += [found.every_flag, "{checkpoint_every}"]
    if found.ckpt_flag and not found.ckpt_dir:
        resume += [found.ckpt_flag, "checkpoints"]
    ckpt_dir = found.ckpt_dir or ("checkpoints" if found.ckpt_flag else None)
    smoke_args, resume_args = (f"[{', '.join(_q(a) for a in args)}]" for args in (smoke, resume))
    preset = (
        f"  preset: {found.preset}  # detected {found.framework}: the preset adds its flags\n"
        if found.preset
        else f"  # preset: none needed for {found.framework} (`rentcheck smoke --list-presets`)\n"
    )
    steps_note = (
        f"  # {' '.join(found.steps_args)}: {found.steps_why}; whatever the flag does,\n"
        "  # rentcheck's step counter (its shim, loaded into the run) stops it after `steps`\n"
        if found.steps_args
        else "  # no steps flag was found: the step counter (rentcheck's shim, loaded into the\n"
        "  # run) stops it after `steps` optimizer steps; add your flag here if you have one\n"
    )
    if ckpt_dir:
        why = f" ({found.ckpt_why})" if found.ckpt_why else ""
        ckpt_line = (
            f"  # Where the run writes checkpoints, relative to where it starts{why}.\n"
            f"  checkpoint-dir: {_q(ckpt_dir)}\n"
        )
    else:
        ckpt_line = (
            "  # Where the run writes checkpoints: not found in the code; rentcheck sees every\n"
            "  # torch.save / safetensors save the run makes. Set it if that guess is wrong.\n"
            '  # checkpoint-dir: "checkpoints"\n'
        )
    if found.links:
        shown = ", ".join(_q(path) for path, _ in found.links)
        why = "; ".join(f"{path}: {reason}" for path, reason in found.links)
        link_line = (
            "  # Untracked paths the scratch copy links to instead of copying\n"
            f"  # ({why}).\n  link: [{shown}]\n"
        )
    else:
        link_line = (
            "  # Untracked paths (data dirs) the scratch copy links to instead of copying:\n"
            '  # link: ["data"]\n'
        )
    found_lines = _found_lines(found)
    return f"""\
# rentcheck settings, written by `rentcheck init` for this project.
{found_lines}# Every key is explained; `rentcheck config` shows the effective values and defaults.
# Rules: `rentcheck rules`, one rule: `rentcheck rule CODE` (pages in docs/rules/).

# --- lint (`rentcheck check`): shell, Python and config hygiene -------------------------
# The rules that run: "ALL" is every stable rule; a family prefix ("RC1") or codes work too.
select: ["ALL"]
# Rules to switch off for the whole project, e.g. ["RC103"].
ignore: []
# The lowest severity that fails a gate (exit 1): note | warning | error.
fail-level: warning

{paths_line}
# --- smoke (`rentcheck smoke`): the real entrypoint, a few optimizer steps on CPU --------
smoke:
  # The command as you type it; it runs in a scratch copy of this project, with the
  # project's interpreter for `python` (its `python` key, else the active virtualenv).
{command_line}  # Appended to the command for the smoke run; {{steps}} becomes `steps`.
{steps_note}  args: {smoke_args}
  # How many optimizer steps the run must reach on CPU.
  steps: 2
  # Seconds before the run counts as hung.
  timeout: 300
  # Trackers and hub downloads off (WANDB_MODE=offline, HF_HUB_OFFLINE=1, ...).
  offline: true
{link_line}{preset}
# --- resume (`rentcheck resume`): killed at step k, the identical command continues -------
resume:
  # Inherits smoke's command, preset, timeout and offline; its own args and steps:
  args: {resume_args}
  # Steps of the uninterrupted reference run; the kills land between its checkpoints.
  steps: 12
{ckpt_line}  # exact: every loss and the final weights equal the uninterrupted run's (deterministic
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
    p.add_argument(
        "--entrypoint",
        metavar="PATH",
        help="the training script to use (relative to DIRECTORY) when the first-ranked "
        "candidate is not the one you run",
    )
    p.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    from rentcheck.atomic import write_atomic

    root = os.path.abspath(args.directory)
    if not os.path.isdir(root):
        raise UsageError(f"{args.directory} is not a directory", hint="rentcheck init [DIR]")
    found = detect(root, args.entrypoint)
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
    others = [c.path for c in found.candidates[1:4]]
    also = f"; also found: {', '.join(others)} (--entrypoint PATH picks one)" if others else ""
    sys.stderr.write(
        f"rentcheck: wrote {target} (entrypoint: {found.entrypoint or 'none found'}; "
        f"framework: {found.framework}{also})\nnext: rentcheck check && rentcheck smoke\n"
    )
    return 0


def _has_pyproject_table(root: str) -> bool:
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as handle:
            return re.search(r"^\[tool\.rentcheck(\.|\])", handle.read(), re.M) is not None
    except OSError:
        return False

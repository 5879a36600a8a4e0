#!/usr/bin/env python3
"""The whole-lifecycle demo on examples/tinytrain, with this machine as the rented box.

``./dev demo`` runs it with the development virtualenv's python. It copies tinytrain into a
fresh folder (a git repository of its own), plants one mistake and shows rentcheck catch it,
fixes it, then walks the lifecycle: smoke, resume, audit, launch (detached), watch, pull
(with verify), teardown (refused while the box holds a checkpoint the pull lacks, then
approved), status and the report. ``--host local`` stands in for the rented GPU box: the
same probes run here, with no SSH, no network and no GPU. Every step prints one line: its
verdict, the seconds it took and the command that ran it; each command's full output is kept
in ``logs/``.

    python examples/demo.py [--dir DEMO_DIR]   # default: ./demo-run (replaced on each run)

The steps are one ordered list (``lifecycle``); a new gate adds its step there.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TINYTRAIN = HERE / "tinytrain"
MARKER = ".rentcheck-demo"  # a folder holding this file was made by the demo: safe to replace
# The detached job's tmux session: one per demo run, so that two demos never share one.
SESSION = f"tinytrain-demo-{os.getpid()}"

# Words the gates print that a newcomer has not met yet, explained once at the start.
GLOSSARY = (
    ("gate", "a set of checks that must pass before the next phase of a rented-GPU job"),
    ("ledger", "PROJECT/.rentcheck/ledger.jsonl: one line per gate run, so later gates know "
     "what passed for these exact files"),
    ("shim", "the small step counter rentcheck loads into the training process (through "
     "sitecustomize) to count optimizer steps and checkpoint writes; nothing is installed"),
)  # fmt: skip


@dataclass
class Demo:
    """Where everything lives: one folder, named on the first line of the output."""

    root: Path
    python: str = sys.executable

    @property
    def project(self) -> Path:
        return self.root / "tinytrain"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def env(self) -> dict[str, str]:
        """The steps' environment: this virtualenv active, and a HOME inside the demo folder,
        so the detached job's files (~/.rentcheck/jobs/) land there too."""
        venv = str(Path(self.python).parent.parent)
        env = dict(os.environ)
        env.update(
            VIRTUAL_ENV=venv,
            PATH=f"{Path(self.python).parent}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(self.root / "home"),
            PYTHON=self.python,  # run.sh's interpreter; --env PYTHON passes it to the job
            NO_COLOR="1",
            GIT_AUTHOR_NAME="rentcheck demo",
            GIT_AUTHOR_EMAIL="demo@rentcheck.invalid",
            GIT_COMMITTER_NAME="rentcheck demo",
            GIT_COMMITTER_EMAIL="demo@rentcheck.invalid",
        )
        env.pop("RENTCHECK_CONFIG", None)
        return env

    def short(self, text: str) -> str:
        """A command as shown: the demo folder written as $DEMO."""
        return text.replace(str(self.root), "$DEMO")


@dataclass
class Step:
    """One line of the demo: a rentcheck command and the exit code that means it did what
    the demo shows (1 for the planted mistake: catching it is the point)."""

    name: str
    says: str  # what the step proves, in a newcomer's words
    argv: list[str]
    expect: int = 0
    prepare: Callable[[Demo], str | None] | None = None  # runs first; may say what it did
    details: Callable[[str], list[str]] = field(default=lambda out: [])
    retry_until: Callable[[str], bool] | None = None  # rerun (every 2 s, up to 90 s) until true


def _cmd(template: str, **paths: object) -> list[str]:
    """A command line written as one string; the paths are quoted in, whatever they hold."""
    return shlex.split(template.format(**{k: shlex.quote(str(v)) for k, v in paths.items()}))


def _lines_with(*needles: str, limit: int = 12) -> Callable[[str], list[str]]:
    def pick(out: str) -> list[str]:
        return [line for line in out.splitlines() if any(n in line for n in needles)][:limit]

    return pick


def _block(first: str) -> Callable[[str], list[str]]:
    """The lines from the one starting with ``first`` up to the next blank line."""

    def pick(out: str) -> list[str]:
        lines = out.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith(first)), None)
        if start is None:
            return []
        block = []
        for line in lines[start:]:
            if not line.strip():
                break
            block.append(line)
        return block

    return pick


def plant_crlf(demo: Demo) -> str:
    """The planted mistake: run.sh saved with Windows line endings, as an editor on Windows
    or ``git config core.autocrlf true`` leaves it. On the box, bash would stop at the first
    line with ``$'\\r': command not found``, after the meter started."""
    script = demo.project / "run.sh"
    script.write_bytes(script.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    return "planted: run.sh saved with Windows (CRLF) line endings"


def make_checkpoint_dir(demo: Demo) -> None:
    """The audit measures the checkpoint directory the job will write to: make it first."""
    (demo.project / "checkpoints").mkdir(exist_ok=True)


def late_checkpoint(demo: Demo) -> str:
    """A checkpoint the job wrote after the pull (as a run still saving would): a copy of its
    newest one under the next step's name, published by rename as a trainer does."""
    ckpt = demo.project / "checkpoints"
    newest = max(ckpt.glob("*.pt"), key=lambda p: p.stat().st_mtime)
    late = ckpt / "step_999.pt"
    tmp = late.with_suffix(".tmp")
    tmp.write_bytes(newest.read_bytes())
    tmp.replace(late)
    return f"planted: {late.name} written on the box after the pull"


def lifecycle(demo: Demo) -> list[Step]:
    """Every step, in lifecycle order."""
    project, job, html = str(demo.project), demo.root / "job", demo.root / "report.html"
    ckpt, pulled = demo.project / "checkpoints", demo.root / "pulled"
    return [
        Step(
            "lint: the catch",
            "a mistake that would only show on the paid box is caught before renting",
            ["check"],
            expect=1,
            prepare=plant_crlf,
            details=_lines_with("RC101", "help: Run"),
        ),
        Step(
            "lint: the fix",
            "the safe fix rewrites run.sh with LF endings (atomically, mode kept)",
            ["check", "--fix"],
            details=_lines_with("Fixed"),
        ),
        Step("lint", "shell, Python and config hygiene of the whole project pass", ["check"]),
        Step(
            "smoke",
            "the real train.py runs 2 optimizer steps on CPU and exits on its own",
            ["smoke"],
            details=_lines_with("smoke: PASSED"),
        ),
        Step(
            "resume",
            "killed (SIGKILL, SIGTERM, mid-save), the identical command continues exactly",
            ["resume"],
            details=_lines_with("between checkpoints", "during a checkpoint write"),
        ),
        Step(
            "audit",
            "the box (here: this machine) has the disk, inodes, memory and detach tool the "
            "run needs",
            _cmd(
                "audit --host local --profile local --path checkpoint={ckpt} --path data={root}"
                " --budget checkpoint=1MiB,keep=3,scratch=100MiB",
                ckpt=ckpt,
                root=demo.root,
            ),
            prepare=make_checkpoint_dir,
            details=_block("local: measured"),
        ),
        Step(
            "launch",
            "the job runs detached (tmux, else setsid), outlives the session, prints its first "
            "step",
            _cmd(
                f"launch --host local --session {SESSION} --cwd {{cwd}} --log {{log}}"
                " --ckpt-dir checkpoints --env PYTHON"
                " -- bash run.sh --steps 60 --ckpt-every 20 --sleep-per-step 0.05",
                cwd=project,
                log=job / "train.log",
            ),
            details=_lines_with("launched on", "first step"),
        ),
        Step(
            "watch: running",
            "one probe: alive, log advancing, checkpoint age, disk and inode headroom",
            ["watch", "--host", "local", "--session", SESSION],
            details=_lines_with(" local "),
        ),
        Step(
            "watch: finished",
            "the job ended with exit status 0, and its checkpoints are there",
            ["watch", "--host", "local", "--session", SESSION],
            details=_lines_with(" local ", "finished with status"),
            retry_until=lambda out: "finished" in out,
        ),
        Step(
            "pull",
            "the roster is built on the box, the files come home with resume, and every "
            "digest and checkpoint is verified",
            _cmd("pull --host local {ckpt} {pulled}", ckpt=ckpt, pulled=pulled),
            details=_lines_with("pulled ", "verified:", "all digests match"),
        ),
        Step(
            "teardown: refused",
            "a checkpoint written on the box after the pull: stopping the meter now would "
            "lose it, so teardown refuses and names it",
            _cmd(
                "teardown --host local --profile local --verified {pulled} --approve",
                pulled=pulled,
            ),
            expect=1,
            prepare=late_checkpoint,
            details=_lines_with("box now", "RC802"),
        ),
        Step(
            "pull: again",
            "the second pull sends only what is new; complete files are never sent again",
            _cmd("pull --host local {ckpt} {pulled}", ckpt=ckpt, pulled=pulled),
            details=_lines_with("pulled ", "all digests match"),
        ),
        Step(
            "teardown",
            "the box holds nothing the verified pull lacks; approved, the gate passes (and "
            "rentcheck still never stops the meter itself)",
            _cmd(
                "teardown --host local --profile local --verified {pulled} --approve",
                pulled=pulled,
            ),
            details=_lines_with("box now", "meter stop on", "teardown gate passed"),
        ),
        Step(
            "status",
            "the ledger: every gate's last verdict for these exact files, and what comes next",
            ["status"],
            details=lambda out: out.splitlines(),
        ),
        Step(
            "report",
            "the lifecycle as one offline HTML page and a CI-summary markdown",
            _cmd("report --html {html} --markdown {md}", html=html, md=demo.root / "report.md"),
            details=lambda out: [f"open {html} in a browser"],
        ),
    ]


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def prepare_folder(root: Path) -> None:
    """A fresh demo folder: an earlier demo's is replaced, anything else is refused."""
    if root.exists():
        if not (root / MARKER).is_file():
            raise SystemExit(
                f"demo: {root} exists and was not made by the demo; nothing was changed "
                "(pass --dir NEW_DIR, or remove it yourself)"
            )
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by examples/demo.py; the next demo replaces this folder\n")
    for name in ("logs", "home", "job"):
        (root / name).mkdir()


def copy_project(demo: Demo) -> None:
    """tinytrain as a project of its own: a copy, a git repository with one commit."""
    shutil.copytree(TINYTRAIN, demo.project, ignore=shutil.ignore_patterns("__pycache__"))
    with open(demo.project / "rentcheck.yaml", "a", encoding="utf-8") as config:
        config.write(
            "# Added by the demo: its box is this machine, so the audit judges only scripts\n"
            "# under this project (other processes on a shared machine are not the demo's).\n"
            f"audit:\n  script_roots: [{json.dumps(str(demo.project))}]\n"
        )
    env = demo.env()
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "tinytrain"]):
        subprocess.run(["git", *argv], cwd=demo.project, env=env, check=True)


def run_step(demo: Demo, number: int, total: int, step: Step) -> bool:
    prepared = step.prepare(demo) if step.prepare else None
    command = ["rentcheck", *step.argv]
    shown = demo.short(shlex.join(command))
    log = demo.logs / f"{number:02d}-{step.name.replace(': ', '-').replace(' ', '-')}.txt"
    started = time.monotonic()
    deadline = started + 90
    while True:
        proc = subprocess.run(
            [demo.python, "-m", "rentcheck", *step.argv],
            cwd=demo.project,
            env=demo.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        out = proc.stdout + proc.stderr
        done = step.retry_until is None or step.retry_until(out) or proc.returncode != 0
        if done or time.monotonic() > deadline:
            break
        time.sleep(2)
    seconds = time.monotonic() - started
    log.write_text(f"$ {shown}\n(exit {proc.returncode})\n\n{out}")
    ok = proc.returncode == step.expect
    verdict = ("CAUGHT" if step.expect == 1 else "PASS") if ok else "FAILED"
    _say(f"[{number:2d}/{total}] {verdict:<6} {step.name:<17} {seconds:5.1f} s  $ {shown}")
    if prepared:
        _say(f"        {prepared}")
    _say(f"        {step.says}")
    for line in step.details(out) if ok else []:
        _say(f"          {line}")
    if not ok:
        _say(f"        expected exit {step.expect}, got {proc.returncode}; the output ({log}):")
        for line in out.splitlines()[-15:]:
            _say(f"          {line}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", default=os.environ.get("RENTCHECK_DEMO_DIR", "demo-run"))
    args = parser.parse_args(argv)
    demo = Demo(Path(args.dir).resolve())
    prepare_folder(demo.root)
    copy_project(demo)
    _say(f"demo: everything goes in DEMO={demo.root}")
    _say("  the project: $DEMO/tinytrain, a copy of examples/tinytrain (its own git repository)")
    _say("  the rented box: this machine (`--host local`): the same probes, no SSH, no GPU")
    _say("  words you will see:")
    for word, meaning in GLOSSARY:
        _say(f"    {word}: {meaning}")
    _say()
    steps = lifecycle(demo)
    started = time.monotonic()
    for number, step in enumerate(steps, start=1):
        if not run_step(demo, number, len(steps), step):
            _say(f"\ndemo: stopped at step {number}; every command's output is in {demo.logs}")
            return 1
    took = time.monotonic() - started
    caught = sum(step.expect == 1 for step in steps)
    _say(
        f"\ndemo: {len(steps)} steps in {took:.0f} s, {caught} caught before they cost anything "
        "(a CRLF script before renting, a checkpoint the pull would have lost before teardown). "
        "Everything "
        f"is in {demo.root}: logs/ (each command's output), tinytrain/ (the project and its "
        "ledger), job/ (the detached run's log), report.html"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

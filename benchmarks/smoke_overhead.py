"""Cost of the smoke and resume gates on examples/tinytrain and small real Lightning and
transformers Trainer projects (tests/fixtures), against baselines run alongside.

* smoke: the project's smoke command (tinytrain: ``train.py --steps 2 --ckpt-every 1``) run
  bare in a fresh copy of the project, and through ``python -m rentcheck smoke`` (CLI
  start-up, config, scratch copy, env block, shim, sandbox snapshot, supervision, report).
  Prints the median of the paired differences; the target is under 0.5 s.
* resume: one uninterrupted run of the resume command (tinytrain: ``--steps 12 --ckpt-every 4``),
  and ``python -m rentcheck resume`` (reference + SIGKILL/SIGTERM chain + kill-during-save
  chain, run side by side), with the chains forked from a warmed interpreter each (the
  default) and with ``fork-server: off`` (every launch a new process, as before), alternating.
  Prints the ratio of the medians for both (the target is at most 3x), and where the gate's
  time went: each launch's wall time, from the gate's JSON, for the median run.

Bare and gated runs alternate, so machine load drifts hit both alike. Startup of a torch
process dominates every run; on a busy machine read the medians and the CPU figures, not
single runs. Both arms run with bytecode caches (under a ``PYTHONPYCACHEPREFIX`` of the
benchmark's own, ``PYTHONDONTWRITEBYTECODE`` dropped), as from an installed rentcheck: without
them every ``python -m rentcheck`` compiles its ~80 modules again (+0.15 s CPU measured).

* fixed cost: the same pairs with a command that trains nothing (one step line), where the
  gate's own cost is not lost in a torch process's variance.

    python benchmarks/smoke_overhead.py [--reps 5] [--resume-reps 3] [--fixed-reps 10]
                                        [--project NAME ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINYTRAIN = os.path.join(REPO, "examples", "tinytrain")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
SMOKE_ARGS = ("--steps", "2", "--ckpt-every", "1")
RESUME_ARGS = ("--steps", "12", "--ckpt-every", "4")


@dataclass(frozen=True)
class Project:
    name: str
    needs: str  # the module the project imports, or "" (skipped when it cannot be imported)
    files: tuple[str, ...]  # copied from tests/fixtures
    smoke: tuple[str, ...]  # the command's arguments after `python`, as the gate runs them
    resume: tuple[str, ...]
    config: str


_HF = ("train.py", "--per_device_train_batch_size", "8", "--output_dir", "out", "--seed", "42")
PROJECTS = (
    Project("tinytrain", "", (), ("train.py", *SMOKE_ARGS), ("train.py", *RESUME_ARGS), ""),
    Project(
        "lightning",
        "lightning",
        ("lightning_trainer/train.py",),
        ("train.py", "--max-steps", "2", "--every", "1"),
        ("train.py", "--max-steps", "12", "--every", "4"),
        "smoke:\n  command: python train.py --max-steps 2 --every 1\n"
        "resume:\n  command: python train.py --max-steps {steps} --every {checkpoint_every}\n"
        "  mode: continues\n",
    ),
    Project(
        "hf-trainer",
        "transformers",
        ("hf_trainer/train.py",),
        (*_HF, "--max_steps", "2", "--save_steps", "1"),
        (
            *_HF,
            "--max_steps",
            "12",
            "--save_steps",
            "4",
            "--logging_steps",
            "1",
            "--skip_incomplete",
            "true",
        ),
        "smoke:\n  command: python train.py --per_device_train_batch_size 8 --output_dir out"
        " --seed 42 --max_steps 2 --save_steps 1\n"
        # --skip_incomplete: a checkpoint cut mid-save is skipped (a note), so the gate passes.
        "resume:\n  command: python train.py --per_device_train_batch_size 8 --skip_incomplete"
        " true\n  preset: hf-trainer\n",
    ),
    # No steps flag in the gated commands (it trains until killed): the shim stops every run,
    # the reference included, at `steps`; the bare baselines stop themselves (--total).
    Project(
        "no-steps-flag",
        "",
        ("endless_resumer/train.py",),
        ("train.py", "--total", "2", "--every", "1"),
        ("train.py", "--total", "12", "--every", "4"),
        "smoke:\n  command: python train.py --every 1\n"
        "resume:\n  command: python train.py --every 4\n  checkpoint-dir: ckpt\n",
    ),
)


PYCACHE = tempfile.mkdtemp(prefix="bench-pycache-")


def _env() -> dict[str, str]:
    """`python` in the configs is the active environment's: this interpreter's. Bytecode is
    cached (in a directory of the benchmark's own) for both arms alike."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: Sequence[str], cwd: str, out: list[str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run with all its descendants; it must succeed. ``out``
    receives its stdout."""
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        list(argv), cwd=cwd, env=_env(), capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stdout}\n{proc.stderr}")
    if out is not None:
        out.append(proc.stdout)
    return elapsed, _children_cpu() - cpu


def bare(project: str, args: Sequence[str]) -> tuple[float, float]:
    """The command in a fresh copy of the project, as the gate runs it (minus the gate)."""
    workdir = tempfile.mkdtemp(prefix="bench-bare-")
    copy = os.path.join(workdir, "p")
    shutil.copytree(project, copy)
    try:
        return timed([sys.executable, *args], copy)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def gated(project: str, gate: str) -> tuple[float, float]:
    return timed([sys.executable, "-m", "rentcheck", gate], project)


def smoke(name: str, project: str, args: Sequence[str], reps: int) -> None:
    pairs = [(bare(project, args), gated(project, "smoke")) for _ in range(reps)]
    wall = statistics.median(g[0] - b[0] for b, g in pairs)
    cpu = statistics.median(g[1] - b[1] for b, g in pairs)
    # Best of each arm: the least a run cost on this machine, load spikes left out.
    best_wall = min(g[0] for _, g in pairs) - min(b[0] for b, _ in pairs)
    best_cpu = min(g[1] for _, g in pairs) - min(b[1] for b, _ in pairs)
    print(
        f"{name} smoke: bare median {statistics.median(b[0] for b, _ in pairs):.2f} s, "
        f"rentcheck smoke median {statistics.median(g[0] for _, g in pairs):.2f} s; overhead "
        f"(median of {reps} paired differences) wall {wall:+.2f} s, CPU {cpu:+.2f} s; "
        f"best of each arm: wall {best_wall:+.2f} s, CPU {best_cpu:+.2f} s  [target < 0.50 s]"
    )


_NOOP = 'print("step 1 loss 0.5", flush=True)\n'


def fixed_cost(scratch: str, reps: int) -> None:
    """rentcheck's own cost, with a command that trains nothing (it prints one step line and
    exits in ~20 ms): what smoke adds to any run, without a torch process's noise around it."""
    root = os.path.join(scratch, "noop")
    os.makedirs(root)
    with open(os.path.join(root, "noop.py"), "w", encoding="utf-8") as handle:
        handle.write(_NOOP)
    with open(os.path.join(root, "rentcheck.yaml"), "w", encoding="utf-8") as handle:
        handle.write('smoke:\n  command: "python noop.py"\n  step-regex: "step (?P<step>\\\\d+)"\n')
    gated(root, "smoke")  # bytecode cache
    pairs = [(bare(root, ("noop.py",)), gated(root, "smoke")) for _ in range(reps)]
    print(
        f"fixed cost (a command that trains nothing, {reps} pairs): rentcheck smoke adds wall "
        f"median {statistics.median(g[0] - b[0] for b, g in pairs):+.3f} s, best "
        f"{min(g[0] for _, g in pairs) - min(b[0] for b, _ in pairs):+.3f} s; CPU median "
        f"{statistics.median(g[1] - b[1] for b, g in pairs):+.3f} s, best "
        f"{min(g[1] for _, g in pairs) - min(b[1] for b, _ in pairs):+.3f} s  [target < 0.50 s]"
    )


def resume(name: str, project: str, args: Sequence[str], reps: int) -> None:
    """The gate with forked chains and with ``fork-server: off``, against one plain run."""
    modes: dict[str, list[tuple[float, float, str]]] = {"forked": [], "fork-server off": []}
    bares = []
    for _ in range(reps):
        bares.append(bare(project, args))
        for mode, extra in (("forked", ()), ("fork-server off", ("--config", _off(project)))):
            out: list[str] = []
            wall, cpu = timed(
                [sys.executable, "-m", "rentcheck", "resume", *extra, "--output-format", "json"],
                project,
                out,
            )
            modes[mode].append((wall, cpu, out[0]))
    ref = statistics.median(b[0] for b in bares)
    ref_cpu = statistics.median(b[1] for b in bares)
    cpus = len(os.sched_getaffinity(0))
    for mode, runs in modes.items():
        gate = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(
            f"{name} resume ({mode}): one uninterrupted run median {ref:.2f} s, rentcheck resume "
            f"median {gate:.2f} s (6 launches: reference, SIGKILL + SIGTERM chain, "
            f"kill-during-save chain, on {cpus} CPUs); wall ratio {gate / ref:.2f}x "
            f"[target <= 3x], CPU ratio {cpu / ref_cpu:.2f}x"
        )
        median_run = sorted(runs)[len(runs) // 2][2]
        print(f"  breakdown of the median run: {_breakdown(median_run)}")


def _off(project: str) -> str:
    """A copy of the project's config with ``fork-server: off`` (rentcheck.yaml beside it)."""
    import yaml

    source = os.path.join(project, "rentcheck.yaml")
    with open(source, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    config.setdefault("resume", {})["fork-server"] = "off"
    target = os.path.join(project, "rentcheck-fork-off.yaml")
    with open(target, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle)
    return target


def _breakdown(report: str) -> str:
    doc = json.loads(report)["resume"]
    runs = ", ".join(
        f"{r['label']} {r['duration_s']:.2f} s ({'forked' if r['started'] == 'forked' else 'new'})"
        for r in doc["runs"]
    )
    return f"gate {doc['duration_s']:.2f} s = {runs}"


def _make(project: Project, scratch: str) -> str:
    root = os.path.join(scratch, project.name)
    if not project.files:
        ignore = shutil.ignore_patterns("__pycache__", "checkpoints")
        shutil.copytree(TINYTRAIN, root, ignore=ignore)
        return root
    os.makedirs(root)
    for rel in project.files:
        shutil.copy(os.path.join(FIXTURES, rel), root)
    with open(os.path.join(root, "rentcheck.yaml"), "w", encoding="utf-8") as handle:
        handle.write(project.config)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="smoke pairs (default 5; 0 skips)")
    parser.add_argument(
        "--resume-reps", type=int, default=3, help="resume pairs (default 3; 0 skips)"
    )
    parser.add_argument(
        "--project", action="append", choices=[p.name for p in PROJECTS], help="default: all"
    )
    parser.add_argument(
        "--fixed-reps", type=int, default=10, help="fixed-cost pairs (default 10; 0 skips)"
    )
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="bench-smoke-")
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} python={sys.version.split()[0]}")
    try:
        if args.fixed_reps:
            fixed_cost(scratch, args.fixed_reps)
        for project in PROJECTS:
            if args.project and project.name not in args.project:
                continue
            if project.needs and importlib.util.find_spec(project.needs) is None:
                print(f"{project.name}: skipped ({project.needs} is not installed)")
                continue
            root = _make(project, scratch)
            bare(root, project.smoke)  # warm the page cache for the framework's libraries
            gated(root, "smoke")  # ... and rentcheck's bytecode cache (pip writes it at install)
            if args.reps:
                smoke(project.name, root, project.smoke, args.reps)
            if args.resume_reps:
                resume(project.name, root, project.resume, args.resume_reps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(PYCACHE, ignore_errors=True)
    print(f"load at the end={os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

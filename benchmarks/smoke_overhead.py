"""Cost of the smoke and resume gates on examples/tinytrain, against baselines run alongside.

* smoke: tinytrain's smoke command (``train.py --steps 2 --ckpt-every 1``) run bare in a fresh
  directory, and through ``python -m rentcheck smoke`` (CLI start-up, config, env block, shim,
  sandbox snapshot, supervision, report). Prints the median of the paired differences; the
  target is under 0.5 s.
* resume: one uninterrupted run of tinytrain's resume command (``--steps 12 --ckpt-every 4``),
  and ``python -m rentcheck resume`` (reference + SIGKILL/SIGTERM chain + kill-during-save
  chain, run side by side). Prints the ratio of the medians; the target is under 3.5x.

Bare and gated runs alternate, so machine load drifts hit both alike. Startup of a torch
process dominates every run; on a busy machine read the medians, not single runs.

    python benchmarks/smoke_overhead.py [--reps 5] [--resume-reps 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINYTRAIN = os.path.join(REPO, "examples", "tinytrain")
SMOKE_ARGS = ("--steps", "2", "--ckpt-every", "1")
RESUME_ARGS = ("--steps", "12", "--ckpt-every", "4")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: Sequence[str], cwd: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one run with all its descendants; it must succeed."""
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stdout}\n{proc.stderr}")
    return elapsed, _children_cpu() - cpu


def bare(project: str, args: Sequence[str]) -> tuple[float, float]:
    workdir = tempfile.mkdtemp(prefix="bench-bare-")
    try:
        return timed([sys.executable, os.path.join(project, "train.py"), *args], workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def gated(project: str, gate: str) -> tuple[float, float]:
    return timed([sys.executable, "-m", "rentcheck", gate], project)


def smoke(project: str, reps: int) -> None:
    pairs = [(bare(project, SMOKE_ARGS), gated(project, "smoke")) for _ in range(reps)]
    wall = statistics.median(g[0] - b[0] for b, g in pairs)
    cpu = statistics.median(g[1] - b[1] for b, g in pairs)
    print(
        f"smoke: bare median {statistics.median(b[0] for b, _ in pairs):.2f} s, rentcheck "
        f"smoke median {statistics.median(g[0] for _, g in pairs):.2f} s; overhead (median "
        f"of {reps} paired differences) wall {wall:+.2f} s, CPU {cpu:+.2f} s  [target < 0.50 s]"
    )


def resume(project: str, reps: int) -> None:
    pairs = [(bare(project, RESUME_ARGS), gated(project, "resume")) for _ in range(reps)]
    ref = statistics.median(b[0] for b, _ in pairs)
    gate = statistics.median(g[0] for _, g in pairs)
    cpu_ratio = statistics.median(g[1] / b[1] for b, g in pairs)
    print(
        f"resume: one uninterrupted run median {ref:.2f} s, rentcheck resume median {gate:.2f} s "
        f"(6 runs: reference, SIGKILL + SIGTERM chain, kill-during-save chain, on "
        f"{len(os.sched_getaffinity(0))} CPUs); wall ratio {gate / ref:.2f}x [target < 3.5x], "
        f"CPU ratio {cpu_ratio:.2f}x"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="smoke pairs (default 5; 0 skips)")
    parser.add_argument(
        "--resume-reps", type=int, default=3, help="resume pairs (default 3; 0 skips)"
    )
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="bench-smoke-")
    project = os.path.join(scratch, "tinytrain")
    shutil.copytree(TINYTRAIN, project, ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} python={sys.version.split()[0]}")
    try:
        bare(project, SMOKE_ARGS)  # warm the page cache for torch's shared libraries
        if args.reps:
            smoke(project, args.reps)
        if args.resume_reps:
            resume(project, args.resume_reps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Verify throughput: `rentcheck verify` against the usual ways of checking a pull, in one run.

Builds about --size (default 2 GiB) of real checkpoints under a temporary directory in /tmp
(safetensors shards in bf16, torch.save zip files in fp32/fp16 incl. an AdamW-style optimizer
state, a legacy-format fp16 file, metrics), builds PULL_MANIFEST.json with `rentcheck manifest
build`, then times, each in a fresh process, best of --repeat runs:

  - rentcheck verify   one read per file: SHA-256 vs the manifest, structure, CRC32 of every
                       torch zip record, pickle allow-list, NaN/Inf on every float tensor
  - sha256sum -c       coreutils, the same digests (integrity only)
  - naive Python       sha256 each file (hashlib), then torch.load(weights_only=True) /
                       safetensors load_file and torch.isfinite(t).all() on every tensor
  - hashlib floor      SHA-256 alone, one thread per CPU over the same files (the compute floor)

and prints wall time, CPU time and peak RSS (os.wait4 of each process) and the ratios against
the targets. A second round does the same on one single --size file, for the memory claim.
Files are read from the page cache (they were just written and fit in RAM), so the figures are
CPU costs, not disk speed. The directory is deleted at the end.

    python benchmarks/verify_throughput.py [--size 2GiB] [--repeat 3] [--no-single]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

MIB = 1 << 20
# Measure what users get: Python caches bytecode unless told not to (some CI images do).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TENSOR_BYTES = 32 * MIB  # a large layer: most checkpoint bytes sit in tensors of this order

NAIVE = r"""
import hashlib, json, os, sys
import torch
from safetensors.torch import load_file
root, manifest = sys.argv[1], json.load(open(sys.argv[2]))
for e in manifest["files"]:
    with open(os.path.join(root, e["path"]), "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == e["sha256"], e["path"]
def tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from tensors(v)
bad = 0
for e in manifest["files"]:
    path = os.path.join(root, e["path"])
    if path.endswith(".safetensors"):
        state = load_file(path)
    elif path.endswith((".pt", ".pth")):
        state = torch.load(path, map_location="cpu", weights_only=True)
    else:
        continue
    for t in tensors(state):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            bad += 1
    del state
sys.exit(1 if bad else 0)
"""

FLOOR = r"""
import hashlib, json, os, sys
from concurrent.futures import ThreadPoolExecutor
root, manifest = sys.argv[1], json.load(open(sys.argv[2]))
def digest(entry):
    sha, buf = hashlib.sha256(), bytearray(8 << 20)
    view = memoryview(buf)
    with open(os.path.join(root, entry["path"]), "rb", buffering=0) as f:
        while n := f.readinto(buf):
            sha.update(view[:n])
    return sha.hexdigest() == entry["sha256"]
files = sorted(manifest["files"], key=lambda e: -e["size"])
with ThreadPoolExecutor(os.cpu_count()) as pool:
    sys.exit(0 if all(pool.map(digest, files)) else 1)
"""


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


def _layers(total: int, dtype: object, seed: int) -> dict[str, object]:
    """A state dict of ``total`` bytes: big layers, plus biases and norms like a real model."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    size = torch.tensor([], dtype=dtype).element_size()
    out: dict[str, object] = {}
    left, i = total, 0
    while left > 0:
        nbytes = min(TENSOR_BYTES, left)
        rows = max(1, nbytes // size // 256)
        out[f"layers.{i}.weight"] = torch.randn(rows, 256, generator=gen).to(dtype)
        out[f"layers.{i}.bias"] = torch.randn(256, generator=gen).to(dtype)
        out[f"layers.{i}.norm.weight"] = torch.ones(256, dtype=dtype)
        left -= nbytes
        i += 1
    return out


def build_corpus(root: str, total: int) -> None:
    import safetensors.torch
    import torch

    def part(share: float) -> int:
        return int(total * share)

    os.makedirs(f"{root}/model")
    for k in range(3):  # an HF-style sharded export, bf16
        name = f"{root}/model/model-{k + 1:05d}-of-00003.safetensors"
        safetensors.torch.save_file(_layers(part(0.10), torch.bfloat16, k), name)
    for step in (1000, 2000):  # training checkpoints, fp32, torch.save zip
        os.makedirs(f"{root}/checkpoints/step_{step}")
        torch.save(
            _layers(part(0.125), torch.float32, step), f"{root}/checkpoints/step_{step}/model.pt"
        )
    params = _layers(part(0.15), torch.float32, 7)
    optimizer = {
        "state": {
            i: {"step": torch.tensor(2000.0), "exp_avg": t, "exp_avg_sq": t.abs()}
            for i, t in enumerate(params.values())
        },
        "param_groups": [{"lr": 3e-4, "betas": (0.9, 0.999), "params": list(range(len(params)))}],
    }
    torch.save(optimizer, f"{root}/checkpoints/step_2000/optimizer.pt")
    os.makedirs(f"{root}/export")
    torch.save(_layers(part(0.05), torch.float16, 11), f"{root}/export/model_fp16.pt")
    torch.save(
        _layers(part(0.10), torch.float16, 12),
        f"{root}/export/ema_legacy.pt",
        _use_new_zipfile_serialization=False,
    )
    with open(f"{root}/metrics.json", "w") as f:
        json.dump({"step": 2000, "loss": 0.3125, "eval": {"acc": 0.91}}, f)
    with open(f"{root}/train.log", "w") as f:
        f.write("".join(f"step {i} loss {1 / (i + 1):.4f}\n" for i in range(20000)))


def build_single(root: str, total: int) -> None:
    import torch

    os.makedirs(root)
    torch.save(_layers(total, torch.float32, 3), f"{root}/model.pt")


def build(kind: str, root: str, nbytes: int) -> None:
    """Write the files from a child process, so this process stays small: a child's peak RSS
    (ru_maxrss) starts from its parent's size at fork."""
    argv = [sys.executable, os.path.abspath(__file__), "--build", kind, root, str(nbytes)]
    subprocess.run(argv, check=True)


@dataclass
class Timing:
    wall: float
    cpu: float
    rss_mib: float
    code: int


def run_once(argv: Sequence[str], cwd: str | None = None) -> Timing:
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    cpu = usage.ru_utime + usage.ru_stime
    return Timing(wall, cpu, usage.ru_maxrss / 1024, proc.returncode)


def best_of(
    repeat: int, argv: Sequence[str], cwd: str | None = None, after: object = None
) -> Timing:
    """Best wall time (and CPU) of ``repeat`` runs; the highest peak RSS seen."""
    runs = []
    for _ in range(repeat):
        runs.append(run_once(argv, cwd))
        if callable(after):
            after()
    best = min(runs, key=lambda t: t.wall)
    return Timing(best.wall, min(t.cpu for t in runs), max(t.rss_mib for t in runs), best.code)


def rentcheck_bin() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "rentcheck")
    return here if os.path.exists(here) else shutil.which("rentcheck") or "rentcheck"


def measure(
    label: str, root: str, work: str, repeat: int, *, sha256sum: bool = True
) -> dict[str, Timing]:
    rc = rentcheck_bin()
    manifest = os.path.join(root, "PULL_MANIFEST.json")
    t0 = time.perf_counter()
    subprocess.run(
        [rc, "manifest", "build", root, "--run-id", "bench"], check=True, capture_output=True
    )
    build_s = time.perf_counter() - t0
    with open(manifest) as f:
        doc = json.load(f)
    sums = os.path.join(work, f"{label}.sha256")
    with open(sums, "w") as f:
        f.writelines(f"{e['sha256']}  {e['path']}\n" for e in doc["files"])
    total = doc["totals"]["bytes"]
    marker = os.path.join(root, "PULL_VERIFIED.json")

    def drop_marker() -> None:
        if not os.path.exists(marker):
            raise SystemExit("rentcheck verify wrote no PULL_VERIFIED.json: it did not pass")
        os.unlink(marker)

    report = os.path.join(work, "report.json")
    verify = [rc, "verify", root, "--isolated", "--output-format", "json", "--output-file", report]
    results = {"rentcheck verify": best_of(repeat, verify, after=drop_marker)}
    if sha256sum:
        results["sha256sum -c"] = best_of(repeat, ["sha256sum", "-c", "--quiet", sums], cwd=root)
    results["naive python"] = best_of(repeat, [sys.executable, "-c", NAIVE, root, manifest])
    results["hashlib floor"] = best_of(repeat, [sys.executable, "-c", FLOOR, root, manifest])
    gb = total / 1e9
    print(f"\n[{label}] {doc['totals']['files']} files, {total / (1 << 30):.2f} GiB; "
          f"manifest build {build_s:.2f} s; best of {repeat}")  # fmt: skip
    print(f"  {'':18} {'wall s':>8} {'GB/s':>7} {'cpu s':>8} {'peak RSS MiB':>13} exit")
    for name, t in results.items():
        print(
            f"  {name:18} {t.wall:8.2f} {gb / t.wall:7.2f} {t.cpu:8.2f} {t.rss_mib:13.0f}"
            f" {t.code:4d}"
        )
    return results


def verdicts(r: dict[str, Timing], single: dict[str, Timing] | None) -> bool:
    rc = r["rentcheck verify"]
    checks = [
        ("naive / rentcheck", r["naive python"].wall / rc.wall, ">= 3x", lambda x: x >= 3),
        (
            "rentcheck / hashlib floor",
            rc.wall / r["hashlib floor"].wall,
            "<= 1.35x",
            lambda x: x <= 1.35,
        ),
        ("peak RSS rentcheck (MiB)", rc.rss_mib, "< 300", lambda x: x < 300),
    ]
    if "sha256sum -c" in r:
        checks.insert(1, ("sha256sum / rentcheck", r["sha256sum -c"].wall / rc.wall, "> 1x",
                          lambda x: x > 1))  # fmt: skip
    checks.append(("cpu: rentcheck / floor", rc.cpu / r["hashlib floor"].cpu, "(info)", None))
    if single is not None:
        s = single["rentcheck verify"]
        checks.append(("single file: peak RSS (MiB)", s.rss_mib, "< 300", lambda x: x < 300))
        checks.append(
            ("single file: naive peak RSS", single["naive python"].rss_mib, "(info)", None)
        )
        checks.append(
            ("single: rentcheck / floor", s.wall / single["hashlib floor"].wall, "(info)", None)
        )
    print("\nratios (wall time; > 1 means rentcheck is faster where it says other / rentcheck)")
    ok = True
    for name, value, target, test in checks:
        mark = "" if test is None else ("ok" if test(value) else "MISSED")
        ok = ok and (test is None or test(value))
        print(f"  {name:30} {value:8.2f}  target {target:9} {mark}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="2GiB", help="bytes of checkpoints (default 2GiB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-single", action="store_true", help="skip the one-big-file round")
    parser.add_argument("--no-sha256sum", action="store_true", help="skip coreutils (slow)")
    parser.add_argument(
        "--build", nargs=3, metavar=("KIND", "ROOT", "BYTES"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.build:  # in a child: torch and the tensors never enter the measuring process
        kind, root, nbytes = args.build
        (build_corpus if kind == "corpus" else build_single)(root, int(nbytes))
        return 0
    size = parse_size(args.size)
    work = tempfile.mkdtemp(prefix="rentcheck-verify-bench-", dir="/tmp")
    try:
        print(f"building {size / (1 << 30):.2f} GiB of checkpoints in {work} ...", flush=True)
        build("corpus", os.path.join(work, "pull"), size)
        corpus = measure("corpus", os.path.join(work, "pull"), work, args.repeat,
                         sha256sum=not args.no_sha256sum)  # fmt: skip
        single = None
        if not args.no_single:
            shutil.rmtree(os.path.join(work, "pull"))
            build("single", os.path.join(work, "single"), size)
            single = measure("one file", os.path.join(work, "single"), work, args.repeat,
                             sha256sum=False)  # fmt: skip
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load {load}")
        return 0 if verdicts(corpus, single) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

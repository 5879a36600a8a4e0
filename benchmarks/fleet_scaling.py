"""Fleet scaling: ``rentcheck audit --hosts`` on 1 vs 8 loopback hosts, each its own sshd.

Starts nine real OpenSSH servers on 127.0.0.1 (the test kit; needs root and openssh-server),
writes an inventory of eight hosts, then times, each as a fresh process and best of N run
alternately:
  - baseline: rentcheck audit --hosts one     (1 host)
  - fleet:    rentcheck audit --hosts all     (8 hosts, the pool's default 8 at a time)
  - serial:   rentcheck audit --hosts all --jobs 1   (the same 8, one after another)
and prints fleet/baseline (target: within 2.5x on a 2-core machine) and serial/fleet.

    python benchmarks/fleet_scaling.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "box"))

from sshdkit import Sshd, SshLab, keygen, start_lab, start_sshd  # noqa: E402 - the test kit

HOSTS = 8


def timed(argv: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: a finding about this machine, still a full audit
        raise SystemExit(f"{argv[3:]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def fleet(lab: SshLab, root: Path) -> tuple[list[Sshd], Path]:
    servers, known, blocks, hosts = [], [], [], []
    for i in range(HOSTS):
        name = f"h{i}"
        pub = keygen(root / f"{name}_host")
        server = start_sshd(root / name, lab.root, name, root / f"{name}_host", pub)
        servers.append(server)
        known.append(f"[127.0.0.1]:{server.port} {pub}\n")
        blocks.append(lab.host_block(name, server.port, root / "known_hosts"))
        tags = '["one"]' if i == 0 else "[]"
        hosts.append(f"  {name}: {{tags: {tags}}}\n")
    (root / "known_hosts").write_text("".join(known))
    (root / "ssh_config").write_text("\n".join(blocks))
    project = root / "project"
    project.mkdir()
    (project / "rentcheck.yaml").write_text(
        # script_roots: only scripts under the project count (the loopback "boxes" are this
        # machine, where other runs' scripts come and go).
        f"audit:\n  expect_gpu: false\n  script_roots: [{project}]\nhosts:\n" + "".join(hosts)
    )
    return servers, project


def run(lab: SshLab, root: Path, repeat: int) -> None:
    servers, project = fleet(lab, root)
    try:
        config = str(root / "ssh_config")
        base = [sys.executable, "-m", "rentcheck", "audit", "--ssh-config", config,
                "--output-format", "json"]  # fmt: skip
        commands = {
            "1 host": [*base, "--hosts", "one"],
            f"{HOSTS} hosts": [*base, "--hosts", "all"],
            f"{HOSTS} hosts, --jobs 1": [*base, "--hosts", "all", "--jobs", "1"],
        }
        for argv in commands.values():
            timed(argv, project)  # warm the page cache
        best = dict.fromkeys(commands, float("inf"))
        outputs: dict[str, str] = {}
        for _ in range(repeat):
            for label, argv in commands.items():
                elapsed, out = timed(argv, project)
                if elapsed < best[label]:
                    best[label], outputs[label] = elapsed, out
        doc = json.loads(outputs[f"{HOSTS} hosts"])
        connections = [h["transport"]["connections"] for h in doc["hosts"]]
        print(f"{HOSTS} sshd on 127.0.0.1, best of {repeat} fresh processes each, "
              f"{os.cpu_count()} CPUs")  # fmt: skip
        for label, seconds in best.items():
            print(f"  audit, {label:<18}: {seconds * 1000:7.1f} ms")
        ratio = best[f"{HOSTS} hosts"] / best["1 host"]
        print(f"  {HOSTS} hosts / 1 host         : {ratio:7.2f}x  (target <= 2.5x)")
        serial = best[f"{HOSTS} hosts, --jobs 1"] / best[f"{HOSTS} hosts"]
        print(f"  serial / pooled            : {serial:7.2f}x")
        print(f"  connections per host       : {connections}")
    finally:
        for server in servers:
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: the sshd kit runs sshd and logs in as the current user")
    with tempfile.TemporaryDirectory(prefix="rentcheck-bench-") as tmp:
        lab = start_lab(Path(tmp) / "lab")
        try:
            run(lab, Path(tmp), args.repeat)
        finally:
            lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

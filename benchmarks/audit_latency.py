"""Audit latency: ``rentcheck audit --host ALIAS`` vs a bare paramiko connect + ``true``.

Starts a real OpenSSH sshd on 127.0.0.1 (the same kit the tests use; needs root and
openssh-server), then times, each as a fresh process and best of N:
  - baseline: python -c 'import paramiko; connect (host key checked, key auth); exec true'
  - rentcheck audit --host box (ssh -G resolution, host key check, one probe exec, rules)
and prints the ratio (target: under 2x), plus the number of SSH connections and exec round
trips per audit, counted both by rentcheck and from the server's DEBUG log.

    python benchmarks/audit_latency.py [--repeat 7]
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

from sshdkit import SshLab, start_lab  # noqa: E402 - the test kit lives beside the tests

BASELINE = """
import getpass, paramiko
client = paramiko.SSHClient()
client.load_host_keys({known_hosts!r})
client.set_missing_host_key_policy(paramiko.RejectPolicy())
client.connect("127.0.0.1", port={port}, username=getpass.getuser(), key_filename={key!r},
               look_for_keys=False, allow_agent=False, timeout=10)
_, out, _ = client.exec_command("true")
out.read()
assert out.channel.recv_exit_status() == 0
client.close()
"""


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} failed ({proc.returncode}): {proc.stderr}")
    return elapsed, proc.stdout


def best_of_interleaved(
    first: list[str], second: list[str], repeat: int
) -> tuple[float, float, str]:
    """Best times of both commands, run alternately so load drift hits both alike."""
    best_a = best_b = float("inf")
    output = ""
    for _ in range(repeat):
        a, _ = timed(first)
        b, out = timed(second)
        best_a = min(best_a, a)
        if b < best_b:
            best_b, output = b, out
    return best_a, best_b, output


def run(lab: SshLab, repeat: int) -> None:
    python = sys.executable
    baseline = BASELINE.format(
        known_hosts=str(lab.known_hosts), port=lab.box.port, key=str(lab.client_key)
    )
    audit = [python, "-m", "rentcheck", "audit", "--host", "box", "--ssh-config",
             str(lab.ssh_config), "--output-format", "json", "--isolated"]  # fmt: skip
    best_of_interleaved([python, "-c", baseline], audit, 1)  # warm the page cache
    log_before = lab.box.log_text()
    base_time, audit_time, output = best_of_interleaved([python, "-c", baseline], audit, repeat)
    log = lab.box.log_text()[len(log_before) :]
    doc = json.loads(output)
    transport = doc["transport"]
    print(f"sshd on 127.0.0.1:{lab.box.port}, best of {repeat} fresh processes each")
    print(f"  bare paramiko connect + true : {base_time * 1000:7.1f} ms")
    print(f"  rentcheck audit --host box   : {audit_time * 1000:7.1f} ms")
    print(f"  ratio                        : {audit_time / base_time:7.2f}x  (target < 2x)")
    print(f"  probe round trip (exec)      : {transport['round_trip_s'] * 1000:7.1f} ms, "
          f"probe itself {doc['facts']['probe']['seconds'] * 1000:.1f} ms on the box")  # fmt: skip
    print(f"  per audit, rentcheck counted : {transport['connections']} connection(s), "
          f"{transport['exec_requests']} exec round trip(s)")  # fmt: skip
    print(f"  per audit, sshd log says     : "
          f"{log.count('Connection from 127.0.0.1') / repeat - 1:g} connection(s), "
          f"{log.count('req exec') / repeat - 1:g} exec request(s), "
          f"{log.count('server_input_channel_open: ctype') / repeat - 1:g} channel(s)"
          "  (the baseline's one of each subtracted)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: the sshd kit runs sshd and logs in as the current user")
    with tempfile.TemporaryDirectory(prefix="rentcheck-bench-") as tmp:
        lab = start_lab(Path(tmp))
        try:
            run(lab, args.repeat)
        finally:
            lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

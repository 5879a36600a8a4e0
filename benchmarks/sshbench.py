"""What the SSH latency benchmarks share: the bare paramiko baseline and interleaved timing.

``audit_latency.py`` and ``watch_latency.py`` each time one rentcheck command against a bare
connect + ``true`` on the same loopback sshd, alternately, best of N.
"""

from __future__ import annotations

import subprocess
import time

__all__ = ["BASELINE", "best_of_interleaved", "timed"]

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

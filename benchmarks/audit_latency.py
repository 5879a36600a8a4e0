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
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "box"))
sys.path.insert(0, str(HERE))

from sshbench import BASELINE, best_of_interleaved  # noqa: E402
from sshdkit import SshLab, start_lab  # noqa: E402 - the test kit lives beside the tests


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

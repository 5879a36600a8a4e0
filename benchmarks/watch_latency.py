"""Watch latency: ``rentcheck watch --host ALIAS`` vs a bare paramiko connect + ``true``.

Starts a real OpenSSH sshd on 127.0.0.1 (the sshd kit of the tests; needs root and
openssh-server), launches a small stepping job on it with ``rentcheck.box.launch``, then
times, each as a fresh process and best of N, run alternately:
  - baseline: python -c 'import paramiko; connect (host key checked, key auth); exec true'
  - rentcheck watch --host box (ssh -G, host key check, one job-probe exec, judgement, state)
and prints the ratio (target: at most 1.5x) and the exec round trips per watch, counted from
the server's DEBUG log (target: 1).

    python benchmarks/watch_latency.py [--repeat 7]
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

JOB = """
import time
for i in range(1, 100000):
    print("step=%d loss=%.4f" % (i, 1.0 / i), flush=True)
    time.sleep(0.05)
"""


def run(lab: SshLab, repeat: int, project: Path) -> None:
    from rentcheck.box.launch import LaunchPlan, start_job
    from rentcheck.box.transport import close_all, open_box

    python = sys.executable
    (project / "job.py").write_text(JOB)
    session = f"bench{os.getpid()}"
    plan = LaunchPlan(session=session, argv=(python, "job.py"), cwd=str(project))
    launched = start_job(open_box("box", ssh_config=str(lab.ssh_config)), plan, {})
    close_all()
    try:
        baseline = BASELINE.format(
            known_hosts=str(lab.known_hosts), port=lab.box.port, key=str(lab.client_key)
        )
        os.chdir(project)
        watch = [python, "-m", "rentcheck", "watch", "--host", "box", "--session", session,
                 "--ssh-config", str(lab.ssh_config), "--output-format", "json",
                 "--isolated"]  # fmt: skip
        best_of_interleaved([python, "-c", baseline], watch, 1)  # warm the page cache
        log_before = lab.box.log_text()
        base_time, watch_time, output = best_of_interleaved([python, "-c", baseline], watch, repeat)
        log = lab.box.log_text()[len(log_before) :]
    finally:
        os.killpg(launched.pgid, 9)
    doc = json.loads(output)
    round_trip = doc["gate"]["extras"]["round_trip_s"]
    execs = log.count("req exec") / repeat - 1
    print(f"sshd on 127.0.0.1:{lab.box.port}, best of {repeat} fresh processes each")
    print(f"  bare paramiko connect + true : {base_time * 1000:7.1f} ms")
    print(f"  rentcheck watch --host box   : {watch_time * 1000:7.1f} ms")
    print(f"  ratio                        : {watch_time / base_time:7.2f}x  (target <= 1.5x)")
    print(f"  job probe round trip (exec)  : {round_trip * 1000:7.1f} ms")
    print(f"  per watch, sshd log says     : "
          f"{log.count('Connection from 127.0.0.1') / repeat - 1:g} connection(s), "
          f"{execs:g} exec round trip(s)  (target 1; the baseline's one subtracted)")  # fmt: skip
    print(f"  status line                  : {doc['gate']['extras']['watch']['line']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: the sshd kit runs sshd and logs in as the current user")
    with tempfile.TemporaryDirectory(prefix="rentcheck-bench-") as tmp:
        lab = start_lab(Path(tmp) / "lab")
        project = Path(tmp) / "project"
        project.mkdir()
        try:
            run(lab, args.repeat, project)
        finally:
            lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

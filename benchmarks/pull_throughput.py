"""Pull throughput: ``rentcheck pull`` (roster, transfer, verify) vs rsync -a + sha256sum -c.

Starts a real OpenSSH sshd on 127.0.0.1 (the kit the tests use; needs root, openssh-server and
rsync), writes a tree of random files on the "box", then, in one run and on the same tree:

  - baseline: ``sha256sum`` of every file on the box over ssh (the sums a careful person takes
    there), ``rsync -a`` of the tree through the same ssh, ``sha256sum -c`` of the copy;
  - rentcheck: ``rentcheck pull box:ROOT LOCAL`` (roster hashed on the box, rsync
    --append-verify, verify with structure checks, marker written);

and prints the ratio (target: rentcheck no slower than the pair, ratio <= 1.0). Then a pull
is dropped at 50 % (every sshd child serving it is killed) and left to resume on its own; it
prints the bytes sent after the drop as a share of the tree (target: at most 55 %).

Issue 28 adds two cases, each with the peak RSS of both ends (here: the measured process,
from wait4; on the box: the programs rentcheck ran there, as each reports its own getrusage
in its answer; nothing samples /proc during a timed run):

  - ``--small-files 20000`` files of ``--small-size 512`` bytes: the same pair vs pull,
    ratio (target <= 2.0);
  - ``--roster-files 1000000`` one-byte files: ``rentcheck manifest build --host box`` only
    (the roster streams across the transport and is parsed here into columns) vs
    ``find | xargs sha256sum`` over ssh, ratio, and the peak RSS of both ends.

Print ``uptime`` beside the figures: on a shared machine the load moves them.

  - ``--pull-files 20000``: whole pulls of that many empty files and of 5x as many, the pull's
    own peak RSS, what each further file costs and that cost at a million.

    python benchmarks/pull_throughput.py [--size-mib 2048] [--files 8] [--repeat 1]
        [--small-files 20000] [--small-size 512] [--roster-files 1000000] [--pull-files 20000]
    (--size-mib 0, --small-files 0, --roster-files 0 or --pull-files 0 skips that case)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "box"))

from sshdkit import SshLab, linked_tree, start_lab  # noqa: E402 - the test kit lives beside the tests

MiB = 1 << 20


def make_tree(root: Path, total: int, files: int) -> None:
    each = total // files
    for i in range(files):
        path = root / f"ckpt/step_{i:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            left = each
            while left:
                n = min(left, 16 * MiB)
                handle.write(os.urandom(n))
                left -= n


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(argv, capture_output=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return done  # type: ignore[no-any-return]


def baseline(lab: SshLab, box: Path, dest: Path) -> float:
    ssh = ["ssh", "-F", str(lab.ssh_config)]
    start = time.perf_counter()
    sums = _run([*ssh, "box", f"cd {box} && find . -type f -print0 | xargs -0 sha256sum"]).stdout
    _run(["rsync", "-a", "-e", " ".join(ssh), f"box:{box}/", f"{dest}/"])
    (dest.parent / "sums").write_bytes(sums)
    _run(["sha256sum", "-c", "--quiet", str(dest.parent / "sums")], cwd=dest)
    return time.perf_counter() - start


def pull_argv(lab: SshLab, box: Path, dest: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rentcheck",
        "pull",
        f"box:{box}",
        str(dest),
        "--ssh-config",
        str(lab.ssh_config),
        "--output-format",
        "json",
    ]


def rentcheck_pull(lab: SshLab, box: Path, dest: Path) -> float:
    start = time.perf_counter()
    _run(pull_argv(lab, box, dest))
    return time.perf_counter() - start


def make_small_tree(root: Path, files: int, size: int) -> None:
    """``files`` files of ``size`` random bytes, 1,000 to a directory (``.dat``: random
    bytes named ``.bin`` start like a pickle one time in 256 and would be judged as one)."""
    for i in range(files):
        path = root / f"shard-{i // 1000:04d}" / f"sample-{i:07d}.dat"
        if i % 1000 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))


def measured(argv: list[str]) -> tuple[float, int, bytes]:
    """Seconds, this end's peak RSS (KiB, from wait4) and what the command printed. Nothing
    samples /proc meanwhile (that took CPU from the measured run only); the box's peak is
    what its programs report of themselves (getrusage), in the command's JSON."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as said:
        proc = subprocess.Popen(argv, stdout=said, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err = proc.stderr.read() if proc.stderr else b""
            raise SystemExit(f"{argv[3:5]} failed: {err[-800:]!r}")
        said.seek(0)
        return seconds, usage.ru_maxrss, said.read()


def small_files_case(lab: SshLab, work: Path, files: int, size: int, repeat: int) -> None:
    box = work / "small-box"
    make_small_tree(box, files, size)
    best_base = best_rc = float("inf")
    here_kib = box_kib = 0
    for i in range(repeat):
        best_base = min(best_base, baseline(lab, box, work / f"small-base{i}"))
        seconds, here, said = measured(pull_argv(lab, box, work / f"small-pull{i}"))
        there = json.loads(said)["pull"].get("box_peak_rss_kib") or 0
        best_rc, here_kib, box_kib = min(best_rc, seconds), max(here_kib, here), max(box_kib, there)
        shutil.rmtree(work / f"small-base{i}")
        shutil.rmtree(work / f"small-pull{i}")
    print(f"small files: {files:,} x {size} B, best of {repeat}")
    print(f"  box sha256sum + rsync -a + sha256sum -c : {best_base:7.2f} s")
    print(f"  rentcheck pull (roster+transfer+verify): {best_rc:7.2f} s")
    print(f"  ratio rentcheck / baseline             : {best_rc / best_base:7.2f}x (target <= 2.0)")
    print(f"  peak RSS: here {here_kib / 1024:.0f} MiB (wait4), box {box_kib / 1024:.0f} MiB")
    shutil.rmtree(box)


def roster_baseline(lab: SshLab, box: Path) -> float:
    """What a careful person runs for a roster: every file's SHA-256 listed on the box over
    ssh, the sums brought back."""
    ssh = ["ssh", "-F", str(lab.ssh_config)]
    start = time.perf_counter()
    _run([*ssh, "box", f"cd {box} && find . -type f -print0 | xargs -0 sha256sum"])
    return time.perf_counter() - start


def roster_case(lab: SshLab, work: Path, files: int, repeat: int) -> None:
    box = work / "roster-box"
    make_small_tree(box, files, 1)
    out = box / "PULL_MANIFEST.json"  # with --host the roster is written on the box
    argv = [
        sys.executable, "-m", "rentcheck", "manifest", "build", "--host", "box", str(box),
        "--ssh-config", str(lab.ssh_config), "--output-format", "json",
    ]  # fmt: skip
    best_base = best_rc = float("inf")
    here_kib = box_kib = 0
    for _ in range(repeat):
        best_base = min(best_base, roster_baseline(lab, box))
        seconds, here, said = measured(argv)
        there = json.loads(said)["manifest"].get("box_peak_rss_kib") or 0
        best_rc, here_kib, box_kib = min(best_rc, seconds), max(here_kib, here), max(box_kib, there)
    print(f"roster: {files:,} files, `manifest build --host box` (parsed here into columns)")
    print(f"  box find | xargs sha256sum over ssh     : {best_base:7.2f} s")
    print(f"  rentcheck manifest build --host        : {best_rc:7.2f} s")
    print(f"  ratio rentcheck / baseline             : {best_rc / best_base:7.2f}x")
    print(f"  roster {out.stat().st_size / MiB:.0f} MiB on the box")
    print(f"  peak RSS: here {here_kib / 1024:.0f} MiB (wait4), box {box_kib / 1024:.0f} MiB")
    shutil.rmtree(box)


_OWN_PEAK = (
    "import sys\nfrom rentcheck.cli import main\ncode = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read()\n"
    "print(next(l.split()[1] for l in status.splitlines() if l.startswith('VmHWM')), "
    "file=sys.stderr)\nsys.exit(code)\n"
)


def pull_memory_case(lab: SshLab, work: Path, files: int) -> None:
    """A whole ``rentcheck pull`` (text output) of ``files`` and of 5x as many: the pull
    process's own peak (VmHWM), what each further file costs, and that cost at a million."""
    peaks = {}
    for n in (files, 5 * files):
        box, dest = work / f"mem-box{n}", work / f"mem-pull{n}"
        linked_tree(box, n)
        argv = [
            sys.executable, "-c", _OWN_PEAK, "pull", f"box:{box}", str(dest),
            "--ssh-config", str(lab.ssh_config), "-q",
        ]  # fmt: skip
        done = _run(argv)
        peaks[n] = int(done.stderr.split()[-1]) / 1024
        shutil.rmtree(box)
        shutil.rmtree(dest)
    per_file = (peaks[5 * files] - peaks[files]) * MiB / (4 * files)
    at_a_million = peaks[5 * files] + per_file * (1_000_000 - 5 * files) / MiB
    print(f"pull memory: {files:,} and {5 * files:,} empty files, whole pulls, text output")
    print(f"  peak RSS here {peaks[files]:.0f} MiB and {peaks[5 * files]:.0f} MiB (VmHWM)")
    print(f"  {per_file:.0f} B a further file: about {at_a_million:.0f} MiB at 1,000,000 files")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                out.append(int(entry))
    return out


def _local_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.bin") if p.is_file())


def dropped_pull(lab: SshLab, box: Path, dest: Path, total: int) -> tuple[dict[str, object], int]:
    """A pull whose connection is killed at 50 %; its JSON result and the bytes present then."""
    proc = subprocess.Popen(
        pull_argv(lab, box, dest), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    at_drop = 0
    seen = threading.Event()
    while proc.poll() is None and not seen.is_set():
        have = _local_bytes(dest) if dest.exists() else 0
        if have >= total // 2:
            at_drop = have
            for pid in _children(lab.box.proc.pid):
                os.kill(pid, signal.SIGKILL)
            seen.set()
        time.sleep(0.005)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"the resumed pull failed ({proc.returncode}): {err[-800:]!r}")
    doc: dict[str, object] = json.loads(out)
    return doc, at_drop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=2048, help="tree size (default 2048)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="alternating runs, best of")
    parser.add_argument("--small-files", type=int, default=20000, help="0: skip (20000)")
    parser.add_argument("--small-size", type=int, default=512, help="bytes each (512)")
    parser.add_argument("--roster-files", type=int, default=1000000, help="0: skip (1000000)")
    parser.add_argument("--pull-files", type=int, default=20000, help="and 5x; 0: skip (20000)")
    args = parser.parse_args()
    if shutil.which("rsync") is None or os.geteuid() != 0:
        print("needs root, openssh-server and rsync", file=sys.stderr)
        return 2
    total = args.size_mib * MiB // args.files * args.files
    with tempfile.TemporaryDirectory(prefix="rc-pullbench-") as tmp:
        work = Path(tmp)
        lab = start_lab(work / "lab")
        try:
            if args.small_files:
                small_files_case(lab, work, args.small_files, args.small_size, args.repeat)
            if args.roster_files:
                roster_case(lab, work, args.roster_files, args.repeat)
            if args.pull_files:
                pull_memory_case(lab, work, args.pull_files)
            if not args.size_mib:
                return 0
            box = work / "box"
            make_tree(box, total, args.files)
            best_base = best_rc = float("inf")
            for i in range(args.repeat):
                best_base = min(best_base, baseline(lab, box, work / f"base{i}"))
                best_rc = min(best_rc, rentcheck_pull(lab, box, work / f"pull{i}"))
                shutil.rmtree(work / f"base{i}")
                shutil.rmtree(work / f"pull{i}")
            mib = total / MiB
            print(
                f"tree: {args.files} files, {mib:.0f} MiB of random bytes; sshd on 127.0.0.1, "
                f"best of {args.repeat}"
            )
            print(
                f"  box sha256sum + rsync -a + sha256sum -c : {best_base:7.2f} s "
                f"({mib / best_base:6.1f} MiB/s)"
            )
            print(
                f"  rentcheck pull (roster+transfer+verify): {best_rc:7.2f} s "
                f"({mib / best_rc:6.1f} MiB/s)"
            )
            print(
                f"  ratio rentcheck / baseline             : {best_rc / best_base:7.2f}x "
                "(target <= 1.0)"
            )
            doc, at_drop = dropped_pull(lab, box, work / "dropped", total)
            pull = doc["pull"]
            assert isinstance(pull, dict)
            tries = pull["attempts"]
            again = sum(t["bytes"] for t in tries[1:])
            print(
                f"  dropped at {100 * at_drop / total:.0f} % ({len(tries)} tries): "
                f"{again / MiB:.0f} MiB sent after the drop = {100 * again / total:.1f} % of "
                "the tree (target <= 55 %)"
            )
        finally:
            lab.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

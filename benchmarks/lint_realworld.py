"""Lint on code nobody here wrote: findings per rule, files per second, and per-rule precision
against hand-read verdicts.

Runs `rentcheck check --preview --no-cache` (every lint rule, preview included) over each
repository folder of the public corpus in ``../shared/corpus/lint/`` (or ``--corpus DIR``),
read where it is, and matches the findings against its ``labels.json`` (one object per
hand-read finding: repo, path, line, code, verdict TP | FP | acceptable, reason).

Precision of a rule = (TP + acceptable) / labelled findings that it still reports; a labelled
TP it no longer reports is printed as a lost true positive, a labelled FP it no longer reports
as fixed. Exits 0 with a message when the corpus is absent; 1 when a run crashed (exit 2 or a
traceback).

    python benchmarks/lint_realworld.py [--corpus DIR] [--show-fp] [--show-unlabelled CODE]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "corpus", "lint"))
# Verdicts read by hand here, on findings the corpus's labels.json does not cover (new rules,
# moved findings); labels.json wins where both have one. Same fields, same honesty.
EXTRA_LABELS = os.path.join(HERE, "lint_realworld_labels.json")


def rentcheck() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "rentcheck")
    found = beside if os.path.exists(beside) else shutil.which("rentcheck")
    if not found:
        raise SystemExit("rentcheck not found: run ./dev venv first")
    return found


def lint_repo(folder: str) -> tuple[dict[str, object], float, int, str]:
    """The JSON report of one repository, the wall time, the exit code and stderr.

    The folder's entries are named one by one, not as ``.``: a lint of the whole project
    root is gate evidence and goes into its ``.rentcheck/ledger.jsonl``, and the corpus is
    read where it is, never written to. The files checked and the findings are the same."""
    entries = sorted(e for e in os.listdir(folder) if e != ".rentcheck")
    with tempfile.TemporaryDirectory(prefix="rentcheck-realworld-") as out:
        report_path = os.path.join(out, "report.json")
        argv = [
            rentcheck(),
            "check",
            "--isolated",
            "--preview",
            "--no-cache",
            "--output-format",
            "json",
            "-o",
            report_path,
            *entries,
        ]
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        report: dict[str, object] = {}
        if os.path.exists(report_path):
            with open(report_path, encoding="utf-8") as handle:
                report = json.load(handle)
    return report, wall, proc.returncode, proc.stderr


def rule_statuses() -> dict[str, str]:
    """stable | preview per rule code, as `rentcheck rules` lists them."""
    proc = subprocess.run(
        [rentcheck(), "rules", "--output-format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {str(r["code"]): str(r["status"]) for r in json.loads(proc.stdout)}


def read_labels(labels_path: str) -> list[dict[str, object]]:
    """The corpus's labels, then ours for findings it has no verdict on."""
    with open(labels_path, encoding="utf-8") as handle:
        labels: list[dict[str, object]] = json.load(handle)
    seen = {(x["repo"], x["path"], x["line"], x["code"]) for x in labels}
    if os.path.isfile(EXTRA_LABELS):
        with open(EXTRA_LABELS, encoding="utf-8") as handle:
            for extra in json.load(handle):
                if (extra["repo"], extra["path"], extra["line"], extra["code"]) not in seen:
                    labels.append(extra)
    return labels


def run_corpus(
    corpus: str, show_unlabelled: str | None
) -> tuple[collections.Counter[str], set[tuple[str, str, int | None, str]], list[str], bool]:
    """Lint each repository folder: findings per rule, the (repo, path, line, code) keys
    reported, the unlabelled findings of one rule, and whether any run crashed."""
    labelled = {
        (x["repo"], x["path"], x["line"], x["code"])
        for x in read_labels(os.path.join(corpus, "labels.json"))
    }
    repos = sorted(n for n in os.listdir(corpus) if os.path.isdir(os.path.join(corpus, n)))
    per_rule: collections.Counter[str] = collections.Counter()
    reported: set[tuple[str, str, int | None, str]] = set()
    unlabelled: list[str] = []
    crashed = False
    files, wall = 0, 0.0
    for repo in repos:
        report, seconds, code, stderr = lint_repo(os.path.join(corpus, repo))
        wall += seconds
        if code not in (0, 1) or "Traceback" in stderr:
            crashed = True
            print(f"{repo}: exit {code}\n{stderr.strip()[-2000:]}")
            continue
        summary = report.get("summary", {})
        checked = int(summary.get("files_checked", 0)) if isinstance(summary, dict) else 0
        files += checked
        results = report.get("results", [])
        assert isinstance(results, list)
        print(f"{repo:20s} {checked:5d} files {len(results):5d} findings {seconds:6.2f} s")
        for finding in results:
            key = (repo, finding["path"], finding["line"], finding["code"])
            per_rule[finding["code"]] += 1
            reported.add(key)
            if finding["code"] == show_unlabelled and key not in labelled:
                where = f"{repo}/{finding['path']}:{finding['line']}"
                unlabelled.append(f"  {where} {finding['message']}")
    rate = files / wall if wall else 0.0
    print(f"\n{files} files in {wall:.2f} s: {rate:.0f} files/s (cold, one process per repo)")
    return per_rule, reported, unlabelled, crashed


def precision_table(
    labels: list[dict[str, object]],
    per_rule: collections.Counter[str],
    reported: set[tuple[str, str, int | None, str]],
) -> tuple[list[str], list[str]]:
    """Print one row per rule; return the labelled good findings lost and the FPs kept."""
    status = rule_statuses()
    print(
        f"\n{'rule':6s} {'status':7s} {'found':>6s} {'labelled':>8s} {'TP':>4s} {'acc':>4s} "
        f"{'FP':>4s} {'precision':>9s} {'FP gone':>8s} {'TP lost':>8s}"
    )
    lost: list[str] = []
    still_fp: list[str] = []
    for rule in sorted(set(per_rule) | {str(x["code"]) for x in labels}):
        counts: collections.Counter[str] = collections.Counter()
        for label in labels:
            key = (str(label["repo"]), str(label["path"]), label["line"], str(label["code"]))
            if key[3] != rule:
                continue
            where = f"  {key[0]}/{key[1]}:{key[2]} {rule}"
            if key in reported:
                counts[str(label["verdict"])] += 1
                if label["verdict"] == "FP":
                    still_fp.append(f"{where}: {label['reason']}")
            elif label["verdict"] == "FP":
                counts["FP gone"] += 1
            else:
                counts["lost"] += 1
                lost.append(f"{where} ({label['verdict']})")
        total = counts["TP"] + counts["acceptable"] + counts["FP"]
        precision = f"{100 * (total - counts['FP']) / total:8.0f}%" if total else "       -"
        print(
            f"{rule:6s} {status.get(rule, '?'):7s} {per_rule[rule]:6d} {total:8d} "
            f"{counts['TP']:4d} {counts['acceptable']:4d} {counts['FP']:4d} {precision:>9s} "
            f"{counts['FP gone']:8d} {counts['lost']:8d}"
        )
    return lost, still_fp


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--show-fp", action="store_true", help="list labelled FPs still reported")
    parser.add_argument("--show-unlabelled", metavar="CODE", help="list unlabelled findings")
    args = parser.parse_args()
    labels_path = os.path.join(args.corpus, "labels.json")
    if not os.path.isfile(labels_path):
        print(f"corpus not found at {args.corpus}: nothing to measure (skipped)")
        return 0
    labels = read_labels(labels_path)
    per_rule, reported, unlabelled, crashed = run_corpus(args.corpus, args.show_unlabelled)
    lost, still_fp = precision_table(labels, per_rule, reported)
    if lost:
        print("\nlabelled true positives (or acceptable) no longer reported:")
        print("\n".join(lost))
    if args.show_fp and still_fp:
        print("\nlabelled false positives still reported:")
        print("\n".join(still_fp))
    if unlabelled:
        print(f"\nunlabelled {args.show_unlabelled} findings:")
        print("\n".join(unlabelled))
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())

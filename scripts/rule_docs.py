#!/usr/bin/env python3
"""Write docs/rules/ (one page per built-in rule, plus the index) from the rules' metadata.

    python scripts/rule_docs.py           # regenerate the pages
    python scripts/rule_docs.py --check   # exit 1 and name each page that is missing or stale

Run it after adding or changing a rule; tests/report/test_rule_docs.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import os
import sys

from rentcheck.atomic import write_atomic
from rentcheck.registry import all_rules
from rentcheck.report.ruledoc import DOCS_DIR, render_docs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _generated(name: str) -> bool:
    """A page this script owns: an RC rule page or the index (other files are left alone)."""
    return name == "README.md" or (name.startswith("RC") and name.endswith(".md"))


def problems(directory: str) -> list[str]:
    """One line per page that differs from what the metadata says (empty: up to date)."""
    pages = render_docs(all_rules(with_plugins=False))
    found = []
    for name, content in sorted(pages.items()):
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except FileNotFoundError:
            found.append(f"{path}: missing")
            continue
        if current != content:
            found.append(f"{path}: out of date")
    present = os.listdir(directory) if os.path.isdir(directory) else []
    found.extend(
        f"{os.path.join(directory, name)}: no rule has this page (renamed or removed rule)"
        for name in sorted(present)
        if _generated(name) and name not in pages
    )
    return found


def write(directory: str) -> int:
    pages = render_docs(all_rules(with_plugins=False))
    os.makedirs(directory, exist_ok=True)
    changed = 0
    for name, content in sorted(pages.items()):
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                same = handle.read() == content
        except FileNotFoundError:
            same = False
        if not same:
            write_atomic(path, content.encode("utf-8"))
            changed += 1
    for name in sorted(os.listdir(directory)):
        if _generated(name) and name not in pages:
            os.remove(os.path.join(directory, name))  # our own generated page of a gone rule
            changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    parser.add_argument("--dir", default=os.path.join(ROOT, DOCS_DIR), help="docs/rules")
    args = parser.parse_args(argv)
    if args.check:
        stale = problems(args.dir)
        for line in stale:
            print(line)
        if stale:
            print("regenerate with: python scripts/rule_docs.py", file=sys.stderr)
        return 1 if stale else 0
    changed = write(args.dir)
    print(f"{args.dir}: {changed} page(s) written or removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The findings cache: same answers warm as cold, keyed by content and rule selection."""

from __future__ import annotations

import json
from pathlib import Path

from rentcheck.config import Config
from rentcheck.lint.cache import MAX_FILES, FindingsCache
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set

BAD = b"#!/usr/bin/env bash\nssh box 'nohup python train.py > log &'\n"


def _run(root: Path, **config: object) -> list[tuple[str, int | None]]:
    (root / "run.sh").chmod(0o755)
    linter = Linter(Config(root=str(root), **config), load_rule_set(with_plugins=False))  # type: ignore[arg-type]
    return [(f.code, f.line) for f in linter.run([str(root / "run.sh")]).findings]


def test_warm_run_equals_cold_run_and_is_stored(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(BAD)
    cold = _run(tmp_path)
    assert ("RC110", 2) in cold and ("RC109", 2) in cold
    assert len(list((tmp_path / ".rentcheck" / "cache").glob("lint-*.json"))) == 1
    assert (tmp_path / ".rentcheck" / ".gitignore").read_text().strip().endswith("*")
    assert _run(tmp_path) == cold


def test_cache_follows_content_and_selection(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(BAD)
    _run(tmp_path)
    script.write_bytes(BAD.replace(b"python", b"python -u").replace(b"log &", b"log 2>&1 &"))
    assert _run(tmp_path) == []
    script.write_bytes(BAD)
    assert _run(tmp_path, select=("RC110",)) == [("RC110", 2)]


def _store(root: Path) -> Path:
    """The cache file of the default selection."""
    linter = Linter(Config(root=str(root)), load_rule_set(with_plugins=False))
    path = FindingsCache(str(root), sorted(linter.enabled)).path
    assert path is not None
    return Path(path)


def test_damaged_or_foreign_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(BAD)
    store = _store(tmp_path)
    store.parent.mkdir(parents=True)
    store.write_text("{not json")
    assert ("RC110", 2) in _run(tmp_path)
    doc = json.loads(store.read_text())
    # A planted entry under another salt must not be believed.
    doc["salt"] = "0" * 16
    store.write_text(json.dumps(doc))
    assert ("RC110", 2) in _run(tmp_path)


def test_selections_keep_their_own_answers(tmp_path: Path) -> None:
    """The shell and the Python pre-commit hooks select different rules; each one's run
    must not throw away the other's cached answers."""
    (tmp_path / "run.sh").write_bytes(BAD)
    (tmp_path / "train.py").write_bytes(b"import torch\nstate = torch.load('c.pt')\n")
    rules = load_rule_set(with_plugins=False)
    shell, python = (Linter(Config(root=str(tmp_path), select=(s,)), rules) for s in ("RC1", "RC2"))
    for linter in (shell, python):
        assert linter.run([str(tmp_path)]).findings  # each finds something, and caches it
    for linter in (shell, python):
        assert FindingsCache(str(tmp_path), sorted(linter.enabled)).entries  # both still there


def test_old_selections_are_pruned(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(BAD)
    theirs = tmp_path / ".rentcheck" / "cache" / "lint-report.json"  # not a cache file of ours
    theirs.parent.mkdir(parents=True)
    theirs.write_text("{}")
    codes = ["RC104", "RC105", "RC106", "RC108", "RC109", "RC110", "RC111", "RC112", "RC113"]
    for code in codes:
        _run(tmp_path, select=(code,))
    stores = list((tmp_path / ".rentcheck" / "cache").glob("lint-*.json"))
    assert len(stores) == MAX_FILES + 1 < len(codes) + 1 and theirs.exists()
    assert _run(tmp_path, select=("RC110",)) == [("RC110", 2)]


def test_warm_run_loads_no_parser(tmp_path: Path) -> None:
    """A pre-commit run over unchanged scripts is answered from the cache: it must not pay
    for importing tree-sitter or the shell tree module (tens of milliseconds)."""
    import subprocess
    import sys

    (tmp_path / "run.sh").write_bytes(BAD)
    probe = (
        "import sys\n"
        "from rentcheck.cli import main\n"
        "code = main(['check', '--isolated', '--output-format', 'concise', 'run.sh'])\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('tree_sitter', "
        "'rentcheck.lint.shell.tree')))\n"
        "print('LOADED', ','.join(loaded), 'EXIT', code)\n"
    )

    def run() -> str:
        proc = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return proc.stdout.splitlines()[-1]

    cold = run()
    assert "tree_sitter" in cold and cold.endswith("EXIT 1"), cold
    assert run() == "LOADED  EXIT 1"

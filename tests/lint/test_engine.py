"""The engine over trees: a process pool gives exactly the serial result, fixes included."""

from __future__ import annotations

from pathlib import Path

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set
from tests.conftest import make_repo


def _tree(root: Path) -> Path:
    files: dict[str, bytes | str] = {}
    for i in range(60):
        eol = b"\r\n" if i % 3 == 0 else b"\n"
        files[f"d{i % 4}/job{i}.sh"] = b"#!/bin/sh" + eol + b"echo " + str(i).encode() + eol
    return make_repo(root, files, executable=tuple(n for i, n in enumerate(files) if i % 5))


def _summary(result) -> list[tuple[str, int | None, str]]:
    return [(f.path or "", f.line, f.code) for f in result.findings]


def test_parallel_run_equals_serial_run(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    # RC103 (a preview rule) too: mode-dependent findings must survive the worker processes.
    linter = Linter(Config(root=str(repo), preview=True), load_rule_set(with_plugins=False))
    serial = linter.run([str(repo)], jobs=1)
    parallel = linter.run([str(repo)], jobs=2)
    assert _summary(serial) == _summary(parallel)
    assert serial.checked == parallel.checked and len(serial.checked) == 60
    assert {code for _, _, code in _summary(serial)} == {"RC101", "RC102", "RC103"}


def test_parallel_fix_rewrites_every_file_once(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    linter = Linter(Config(root=str(repo), select=("RC101",)), load_rule_set(with_plugins=False))
    fixed = linter.run([str(repo)], fix=True, jobs=2)
    assert len(fixed.fixed) == 20 and fixed.findings == []
    assert not any(b"\r\n" in p.read_bytes() for p in repo.rglob("*.sh"))


def test_files_go_back_to_the_repository_checks_that_can_use_them(tmp_path: Path) -> None:
    """RC102 judges git work trees only: a script outside one is not sent back to the parent
    for it (with a few hundred scripts that was most of what crossed the pipe)."""
    from rentcheck.lint.walk import collect

    repo = make_repo(tmp_path / "repo", {"in.sh": "#!/bin/sh\necho in\n"})
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "out.sh").write_text("#!/bin/sh\necho out\n")
    linter = Linter(Config(root=str(tmp_path)), load_rule_set(with_plugins=False))
    sent = {}
    for candidate in collect([str(repo), str(outside)], str(tmp_path), []):
        outcome = linter.lint_candidate(candidate, fix=False, diff=False)
        if outcome is not None:
            sent[Path(candidate.abspath).name] = outcome.project_source is not None
    assert sent == {"in.sh": True, "out.sh": False}
    # And the repository check still judges the script inside the work tree.
    result = linter.run([str(repo), str(outside)], jobs=2)
    assert [f.code for f in result.findings if f.code == "RC102"] == ["RC102"]


def test_no_cache_runs_hash_and_keep_nothing(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo")
    linter = Linter(Config(root=str(repo)), load_rule_set(with_plugins=False))
    uncached = linter.run([str(repo)], cache=False, jobs=2)
    assert linter.cache is None and not (repo / ".rentcheck").exists()
    cached = linter.run([str(repo)], jobs=2)
    assert linter.cache is not None and (repo / ".rentcheck" / "cache").is_dir()
    assert _summary(uncached) == _summary(cached)

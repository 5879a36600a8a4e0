"""The payload room's laws (``rentcheck.payload``): the programs that run on the box or in the
user's interpreter use the standard library only, parse as the oldest Python each promises, and
run under that interpreter where this machine has it (else under the oldest one it has)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rentcheck.payload import PAYLOAD_DIR, SERVER_PATH, SHIM_DIR

# program -> the oldest Python it promises
PROMISES = {
    "probe.py": (3, 6),
    "jobprobe.py": (3, 6),
    "manifest_builder.py": (3, 7),
    "roster_answer.py": (3, 7),
    "shim/sitecustomize.py": (3, 8),
    "zygote_serve.py": (3, 8),
}


def test_the_room_holds_exactly_the_promised_programs() -> None:
    found = {
        str(p.relative_to(PAYLOAD_DIR))
        for p in Path(PAYLOAD_DIR).rglob("*.py")
        if p.name != "__init__.py" or p.parent != Path(PAYLOAD_DIR)
    }
    assert found == set(PROMISES)
    assert os.path.join(PAYLOAD_DIR, "zygote_serve.py") == SERVER_PATH
    assert os.path.isfile(os.path.join(SHIM_DIR, "sitecustomize.py"))


@pytest.mark.parametrize("name", sorted(PROMISES))
def test_parses_as_its_oldest_python_and_imports_only_the_stdlib(name: str) -> None:
    source = Path(PAYLOAD_DIR, name).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=PROMISES[name])
    for node in tree.body:  # imports that run unconditionally, at module level
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for imported in names:
            top = imported.split(".")[0]
            assert top == "__future__" or top in sys.stdlib_module_names, f"{name}: {imported}"


def _interpreters(minor: int) -> list[str]:
    """Real ``python3.MINOR`` binaries (pyenv's shims only run a version pyenv selected)."""
    import glob
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir  # the tests' HOME is a private one
    root = os.environ.get("PYENV_ROOT") or os.path.join(home, ".pyenv")
    found = sorted(
        glob.glob(os.path.join(root, "versions", f"3.{minor}.*", "bin", f"python3.{minor}"))
    )
    on_path = shutil.which(f"python3.{minor}")
    return [*found, *([on_path] if on_path and "/shims/" not in on_path else [])]


def _oldest(promised: tuple[int, int]) -> tuple[str, tuple[int, int]]:
    """The promised interpreter if this machine has it, else the oldest one it has (>= it)."""
    for minor in range(promised[1], sys.version_info[1] + 1):
        for candidate in _interpreters(minor):
            ok = subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False)
            if ok.returncode == 0:
                return candidate, (3, minor)
    return sys.executable, (sys.version_info[0], sys.version_info[1])


def test_the_probe_and_job_probe_run_under_their_oldest_python(tmp_path: Path) -> None:
    from rentcheck.box.facts import probe_stream
    from rentcheck.box.jobfacts import job_stream

    python, version = _oldest(PROMISES["probe.py"])
    request = {"paths": {"data": str(tmp_path)}, "sections": ["host", "disks"]}
    ran = subprocess.run(
        [python, "-I", "-S", "-", json.dumps(request)],
        input=probe_stream(), capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, (version, ran.stderr.decode())
    facts = json.loads(ran.stdout)
    assert facts["schema"].startswith("rentcheck/box-facts/") and facts["probe"]["kind"] == "python"
    job = subprocess.run(
        [python, "-I", "-S", "-c", "import sys; exec(compile(sys.stdin.read(), 'job', 'exec'))"],
        input=job_stream(), capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert b"SyntaxError" not in job.stderr and b"ImportError" not in job.stderr, job.stderr


def test_the_manifest_builder_runs_under_its_oldest_python(tmp_path: Path) -> None:
    python, version = _oldest(PROMISES["manifest_builder.py"])
    root = tmp_path / "run"
    (root / "ckpt").mkdir(parents=True)
    (root / "ckpt" / "last.pt").write_bytes(b"x" * 1000)
    builder = os.path.join(PAYLOAD_DIR, "manifest_builder.py")
    ran = subprocess.run(
        [python, "-I", "-S", builder, str(root), "--no-blake3"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, (version, ran.stderr)
    doc = json.loads((root / "PULL_MANIFEST.json").read_text())
    assert [f["path"] for f in doc["files"]] == ["ckpt/last.pt"]


@pytest.mark.parametrize("mode", ["roster", "stat", "hash"])
def test_the_roster_answer_runs_under_its_oldest_python(tmp_path: Path, mode: str) -> None:
    """Each request, answered by the oldest promised Python, with the answer spooled (a
    tiny inline bound) and read back whole: the head line, then the compressed payload."""
    import zlib

    from rentcheck.pull.remote_roster import remote_program

    python, version = _oldest(PROMISES["roster_answer.py"])
    root = tmp_path / "run"
    (root / "ckpt").mkdir(parents=True)
    (root / "ckpt" / "last.pt").write_bytes(b"x" * 1000)
    (root / "ckpt" / "next.pt.tmp").write_bytes(b"y")
    request = {"mode": mode, "root": str(root), "paths": ["ckpt/last.pt", "gone"],
               "inline_max": 64, "write": mode == "roster"}  # fmt: skip
    ran = subprocess.run(
        [python, "-I", "-S", "-"], input=remote_program(request),
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, (version, ran.stderr.decode())
    line, _, rest = ran.stdout.partition(b"\n")
    head = json.loads(line)
    assert head["ok"] and head["python"] == "{}.{}".format(*version) and head["peak_rss_kib"] > 0
    if "spool" in head:
        with open(head["spool"], "rb") as spooled:
            rest = spooled.read()
        os.unlink(head["spool"])
    payload = zlib.decompress(rest)
    if mode == "roster":
        assert payload == (root / "PULL_MANIFEST.json").read_bytes()
        doc = json.loads(payload)
        assert [f["path"] for f in doc["files"]] == ["ckpt/last.pt"]
        assert [left["path"] for left in doc["leftovers"]] == ["ckpt/next.pt.tmp"]
    elif mode == "stat":
        rows = [row for line in payload.splitlines() for row in json.loads(line)]
        assert [(row[0], row[1]) for row in rows] == [
            ("ckpt/last.pt", 1000),
            ("ckpt/next.pt.tmp", 1),
        ]
    else:
        doc = json.loads(payload)
        assert [f["path"] for f in doc["files"]] == ["ckpt/last.pt"] and doc["missing"] == ["gone"]


def test_the_shim_and_fork_server_load_under_their_oldest_python(tmp_path: Path) -> None:
    python, version = _oldest(PROMISES["shim/sitecustomize.py"])
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": SHIM_DIR}
    ran = subprocess.run(
        [python, "-c", "import sys; print('sitecustomize' in sys.modules)"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0 and ran.stdout.strip() == "True", (version, ran.stderr)
    compiled = subprocess.run(
        [python, "-c", f"compile(open({SERVER_PATH!r}).read(), 'serve', 'exec')"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert compiled.returncode == 0, (version, compiled.stderr)

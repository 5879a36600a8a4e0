"""Every real-world script gets a verdict: no crash, no exit 2, notes for what did not parse."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rentcheck.config import Config
from rentcheck.lint.engine import Linter
from rentcheck.registry import load_rule_set
from tests.conftest import run_subprocess

pytest.importorskip("tree_sitter_bash")

HOSTILE: dict[str, bytes] = {
    "junk.sh": b"#!/bin/sh\n" + bytes(range(256)) * 40,
    "long_line.sh": b"#!/bin/bash\necho " + b"a" * 2_000_000 + b"\n",
    "deep.sh": b"#!/bin/bash\necho " + b"$(" * 400 + b"x" + b")" * 400 + b"\n",
    "unterminated.sh": b"#!/bin/bash\necho 'never closed\nssh box 'pkill -f x; nohup y &\n",
    "heredoc.sh": b"#!/bin/bash\ncat <<-EOF\n\t$(rm -rf /)\n\tEOF\nfor i do echo $i; done\n",
    "python_behind_sh": b"#!/bin/sh\nimport os\nprint(os.getcwd())\n",
    "crlf_everything.sh": (
        b"#!/bin/bash\r\nX=1\r\ntmux new -d 'echo $X'\r\nwhile true; do sleep 1; done\r\n"
    ),
    "nul.sh": b"#!/bin/bash\necho a\0b\n",
    "broken.py": b"def f(:\n    torch.save(x, 'a.pt')\n",
    "latin1.py": "x = 'caf\u00e9'\n".encode("latin-1"),
    "empty.sh": b"",
    "only_shebang": b"#!/bin/bash",
}


def test_hostile_inputs_never_crash(tmp_path: Path) -> None:
    for name, data in HOSTILE.items():
        (tmp_path / name).write_bytes(data)
        (tmp_path / name).chmod(0o755)
    linter = Linter(Config(root=str(tmp_path), preview=True), load_rule_set(with_plugins=False))
    result = linter.run([str(tmp_path)], cache=False)
    checked = set(result.checked)
    assert {"deep.sh", "unterminated.sh", "python_behind_sh", "broken.py"} <= checked
    codes = {(f.path, f.code) for f in result.findings}
    assert ("python_behind_sh", "RC119") in codes
    assert ("crlf_everything.sh", "RC101") in codes


def _system_shell_scripts(limit: int) -> list[str]:
    found: list[str] = []
    for top in ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/share", "/etc"):
        for current, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(current, name)
                try:
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    with open(path, "rb") as handle:
                        head = handle.read(64)
                except OSError:
                    continue
                if head.startswith(b"#!") and any(
                    s in head.split(b"\n")[0] for s in (b"sh", b"bash")
                ):
                    found.append(path)
                if len(found) >= limit:
                    return found
    return found


def test_real_system_scripts_get_a_verdict(tmp_path: Path) -> None:
    scripts = _system_shell_scripts(250)
    if len(scripts) < 20:
        pytest.skip("this machine has too few system shell scripts to be a real-world sample")
    proc = run_subprocess(
        "check",
        "--isolated",
        "--preview",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "json",
        *scripts,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["summary"]["files_checked"] >= len(scripts) // 2
    # Partial parses are notes, never errors.
    partial = [r for r in doc["results"] if r["code"] == "RC119"]
    assert all(r["severity"] == "note" for r in partial)


@pytest.mark.parametrize("broken", ["package", "compiled module"])
def test_a_broken_tree_sitter_install_is_one_clear_error(tmp_path: Path, broken: str) -> None:
    """find_spec sees the grammar package but loading it fails: exit 2, one line, the fix.
    Either the package's import fails, or its compiled module (loaded directly) is damaged."""
    import sys
    from importlib.machinery import EXTENSION_SUFFIXES

    fake = tmp_path / "site" / "tree_sitter_bash"
    fake.mkdir(parents=True)
    if broken == "compiled module":  # the package imports fine; its compiled half does not
        (fake / "__init__.py").write_text("")
        (fake / f"_binding{EXTENSION_SUFFIXES[-1]}").write_bytes(b"\x7fELF truncated")
    else:
        (fake / "__init__.py").write_text("raise ImportError('libtree-sitter-bash.so: gone')\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    site = os.pathsep.join([str(tmp_path / "site"), *sys.path])
    proc = run_subprocess(
        "check", "--isolated", "--no-cache", "run.sh", cwd=tmp_path, env={"PYTHONPATH": site}
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tree-sitter-bash is installed but does not load" in lines[0]
    assert "pip install --force-reinstall" in lines[0] and "Traceback" not in proc.stderr
    assert ("_binding" if broken == "compiled module" else "gone") in lines[0]


HIDE_PARSER = """
import sys
from importlib.abc import MetaPathFinder

class WithoutTreeSitter(MetaPathFinder):  # an environment where the parser is not installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("tree_sitter", "tree_sitter_bash"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, WithoutTreeSitter())
from rentcheck.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_the_parser_a_launch_script_is_an_error_not_a_pass(tmp_path: Path) -> None:
    """A core install without tree-sitter used to skip RC104-RC119 silently and pass a
    launch script full of the classic mistakes: now it is exit 2 with the fix."""
    import subprocess
    import sys

    script = "#!/bin/bash\nnohup python train.py > log &\npgrep -f train.py\n"
    (tmp_path / "launch.sh").write_text(script)
    proc = subprocess.run(
        [sys.executable, "-c", HIDE_PARSER, "check", "--isolated", "--no-cache", "launch.sh"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "All checks passed" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "need tree-sitter and tree-sitter-bash" in lines[0]
    assert "pip install --force-reinstall rentcheck" in lines[0]

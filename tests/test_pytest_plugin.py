"""``pytest --rentcheck`` in real pytest processes, in all three xdist modes."""

from __future__ import annotations

import pytest

XDIST_MODES = {
    "xdist-not-loaded": ["-p", "no:xdist"],
    "xdist-inactive": [],
    "xdist-n2": ["-n", "2"],
}


@pytest.fixture
def tree(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.path.joinpath("bad.sh").write_bytes(b"#!/bin/bash\r\necho hi\r\n")
    pytester.path.joinpath("bad.sh").chmod(0o755)
    pytester.path.joinpath("also_bad").write_bytes(b"#!/bin/sh\necho x\n")  # shebang, no exec bit
    pytester.path.joinpath("good.sh").write_bytes(b"#!/bin/sh\necho ok\n")
    pytester.path.joinpath("good.sh").chmod(0o755)
    pytester.path.joinpath("README.md").write_text("# not checked\n")
    pytester.path.joinpath("rentcheck.yaml").write_text("preview: true\n")  # RC103 is preview
    pytester.makepyfile(test_real="def test_ok():\n    assert True\n")
    return pytester


def test_plugin_is_inert_without_the_flag(tree: pytest.Pytester) -> None:
    result = tree.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "RC1" not in result.stdout.str() and "rentcheck-status" not in result.stdout.str()


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_one_item_per_checked_file_with_linter_output(tree: pytest.Pytester, mode: str) -> None:
    result = tree.runpytest_subprocess(
        "--rentcheck", "-p", "no:cacheprovider", "-rf", *XDIST_MODES[mode]
    )
    # bad.sh, also_bad fail; good.sh, test_real.py (Python rules), the status item and the
    # ordinary test pass.
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*bad.sh:1:12: RC101 [[]*] CRLF line endings*"])
    result.stdout.fnmatch_lines(["*also_bad:1:1: RC103 has a shebang but is not executable*"])
    assert "Traceback" not in out and "def runtest" not in out


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_status_item_fails_when_nothing_was_checked(pytester: pytest.Pytester, mode: str) -> None:
    pytester.path.joinpath("notes.txt").write_text("nothing to lint here\n")
    result = pytester.runpytest_subprocess(
        "--rentcheck", "-p", "no:cacheprovider", *XDIST_MODES[mode]
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rentcheck checked no files*"])


def test_status_item_runs_repository_checks(pytester: pytest.Pytester) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    script = pytester.path.joinpath("run.sh")
    script.write_bytes(b"#!/bin/sh\necho ok\n")
    script.chmod(0o755)
    subprocess.run(["git", "add", "-A"], cwd=pytester.path, check=True)
    result = pytester.runpytest_subprocess("--rentcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*.gitattributes: RC102 [[]*] 1 shell script(s) not pinned to LF*"]
    )


def test_config_excludes_and_ignores_apply(tree: pytest.Pytester) -> None:
    tree.path.joinpath("rentcheck.yaml").write_text("ignore: [RC103]\nextend-exclude: [bad.sh]\n")
    result = tree.runpytest_subprocess("--rentcheck", "-p", "no:cacheprovider", "-v")
    # also_bad, good.sh and test_real.py are checked (clean now), bad.sh is not collected.
    result.assert_outcomes(passed=5)
    assert "bad.sh::" not in result.stdout.str().replace("good.sh::", "")


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.rentcheck:*", "@pytest.mark.rentcheck_gate(name):*"])


def test_items_carry_the_rentcheck_marker(tree: pytest.Pytester) -> None:
    result = tree.runpytest_subprocess("--rentcheck", "-m", "rentcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=2, deselected=1)

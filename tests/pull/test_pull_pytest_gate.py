"""The verify gate in pytest: `--rentcheck-verify PATH` items and the `rentcheck_verify` fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# In a subprocess, as a user's CI runs it; hypothesis is not needed there and is slow to import.
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
USER_TESTS = """
import pytest

@pytest.mark.rentcheck_gate("verify")
def test_checkpoints_are_clean(rentcheck_verify):
    result = rentcheck_verify()
    assert result.ok, [f.message for f in result.findings]
    assert any(v.kind == "safetensors" for v in result.files)

def test_ordinary():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester, pulled: Path) -> pytest.Pytester:
    pytester.makefile(".ini", pytest="[pytest]\n")
    pytester.makefile(".yaml", rentcheck="verify:\n  jobs: 2\n")
    pytester.makepyfile(test_user=USER_TESTS)
    shutil.move(str(pulled), str(pytester.path / "results"))
    return pytester


def test_gate_item_passes_and_marked_tests_join_it(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST, "--rentcheck-verify", "results", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*test_checkpoints_are_clean PASSED*", "*rentcheck-verify?results? PASSED*"]
    )
    # One verify body: a pass under pytest writes the marker teardown reads, as the CLI's does.
    assert (project.path / "results" / "PULL_VERIFIED.json").exists()


def test_one_item_per_root_failing_with_finding_lines(project: pytest.Pytester) -> None:
    shutil.copytree(project.path / "results", project.path / "other")
    (project.path / "other" / "notes.txt").write_text("changed\n")
    (project.path / "other" / "st" / "model.safetensors").write_bytes(b"\x00" * 8)
    result = project.runpytest_subprocess(
        *FAST, "--rentcheck-verify", "results", "--rentcheck-verify", "other"
    )
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*other/notes.txt: RC508 * bytes, the manifest says 6",
            "*other/st/model.safetensors: RC508 8 bytes, the manifest says *",
        ]
    )
    assert "rentcheck-verify[other]" in out and "Traceback" not in out


def test_expected_run_id_option(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        *FAST, "--rentcheck-verify", "results", "--rentcheck-expect-run-id", "run-9999"
    )
    result.assert_outcomes(passed=2, failed=1)  # the marked test does not ask for a run id
    result.stdout.fnmatch_lines(["*PULL_MANIFEST.json: RC502 manifest is for run 'run-0001'*"])


def test_missing_root_fails_the_item_in_one_line(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST, "--rentcheck-verify", "nowhere")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*rentcheck-verify?nowhere?*",
            "*rentcheck-verify[[]nowhere]: '*/nowhere' is not a directory*",
        ]
    )


def test_without_the_gate_marked_tests_are_skipped(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the verify gate was not asked for*"])


def test_fixture_takes_overrides(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_nan="""
        import torch
        from safetensors.torch import save_file

        def test_warn_mode(rentcheck_verify, tmp_path):
            save_file({"w": torch.tensor([float("nan")])}, str(tmp_path / "x.safetensors"))
            strict = rentcheck_verify(tmp_path)
            assert {f.code for f in strict.findings} == {"RC501", "RC516"}
            relaxed = rentcheck_verify(tmp_path, nonfinite="warn")
            assert [f.severity.label for f in relaxed.findings if f.code == "RC516"] == ["warning"]
        """
    )
    result = project.runpytest_subprocess(*FAST, "test_nan.py")
    result.assert_outcomes(passed=1)

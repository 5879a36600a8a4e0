"""``pytest --rentcheck-smoke`` / ``--rentcheck-resume``: gate items, marked tests, fixtures."""

from __future__ import annotations

import pytest
from tinykit import FAKE_TRAINER

USER_TESTS = """
import pytest

@pytest.mark.rentcheck_gate("smoke")
def test_overfit_a_few_steps(rentcheck_smoke):
    outcome = rentcheck_smoke.run(args=["--steps", "6"])
    assert outcome.passed and len(outcome.losses) == 6

def test_ordinary():
    assert True
"""


def _project(pytester: pytest.Pytester, smoke_args: str = "") -> pytest.Pytester:
    # The trainer lives in a subdirectory: pytester writes its own output files into the
    # rootdir while the gate runs, which the sandbox check would rightly report.
    project = pytester.mkdir("project")
    project.joinpath("fake_train.py").write_text(FAKE_TRAINER.read_text())
    project.joinpath("rentcheck.yaml").write_text(
        "smoke:\n"
        '  command: "{python} {root}/fake_train.py"\n'
        f"  args: [{smoke_args}]\n"
        "resume:\n"
        "  args: [--steps, '8', --ckpt-every, '2', --sleep, '0.15']\n"
        "  signals: [SIGKILL]\n"
        "  kill-during-save: false\n"
    )
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    config = str(pytester.path / "project" / "rentcheck.yaml")
    return pytester.runpytest_subprocess(
        "--rentcheck-config", config, "-p", "no:cacheprovider", *args
    )


def test_without_the_option_the_gate_tests_are_skipped(pytester: pytest.Pytester) -> None:
    result = _run(_project(pytester), "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the smoke gate was not asked for (--rentcheck-gate smoke)*"])
    assert "rentcheck smoke gate" not in result.stdout.str()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist-n2"])
def test_the_gate_item_and_a_marked_test_form_the_gate(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    result = _run(_project(pytester), "--rentcheck-smoke", *xdist)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["rentcheck smoke gate: PASSED (2 passed)"])


def test_a_failing_smoke_fails_its_item_without_a_traceback(pytester: pytest.Pytester) -> None:
    result = _run(
        _project(pytester, smoke_args="--nan-at, '1'"), "--rentcheck-smoke", "-m", "rentcheck"
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*smoke: FAILED*", "*class: non-finite: step=1 loss=nan*", "<project>: RC607 NaN/Inf*"]
    )
    assert "Traceback" not in out and "def runtest" not in out
    result.stdout.fnmatch_lines(
        ["rentcheck smoke gate: FAILED (1 failed)", "  failed: *rentcheck-smoke*"]
    )


def test_the_resume_gate_item(pytester: pytest.Pytester) -> None:
    # -m rentcheck_gate selects exactly the gates: rentcheck's items and the marked tests.
    result = _run(_project(pytester), "--rentcheck-resume", "-m", "rentcheck_gate", "-rs")
    result.assert_outcomes(passed=1, skipped=1)  # the smoke test, its gate not asked for
    result.stdout.fnmatch_lines(["rentcheck resume gate: PASSED (1 passed)"])


def test_a_config_error_is_one_clean_line(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("rentcheck.yaml").write_text("smoke:\n  steps: 0\n  command: x\n")
    result = pytester.runpytest_subprocess("--rentcheck-smoke", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["rentcheck-smoke: smoke.steps in *must be an integer >= 1*"])

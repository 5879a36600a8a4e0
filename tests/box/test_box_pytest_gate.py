"""The audit gate in pytest: ``--rentcheck-audit HOST`` items and the ``rentcheck_box`` fixture."""

from __future__ import annotations

import pytest
from sshdkit import SshLab

# In a subprocess: an in-process run re-imports cryptography's native module, which breaks it.
# Hypothesis is not needed there and costs seconds to import.
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
USER_TESTS = """
import pytest

@pytest.mark.rentcheck_gate("audit")
def test_box_answers(rentcheck_box):
    result = rentcheck_box.run("echo $((6 * 7))")
    assert result.ok and result.stdout == b"42\\n"

def test_ordinary():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", pytest="[pytest]\n")  # the project root: rentcheck.yaml is here
    pytester.makefile(".yaml", rentcheck="audit:\n  expect_gpu: false\n")
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def test_gate_item_passes_and_user_tests_join_it(project: pytest.Pytester, lab: SshLab) -> None:
    result = project.runpytest_subprocess(
        *FAST, "--rentcheck-audit", "box", f"--rentcheck-ssh-config={lab.ssh_config}", "-v"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_box_answers PASSED*", "*rentcheck-audit?box? PASSED*"])


def test_gate_item_fails_with_finding_lines(project: pytest.Pytester, lab: SshLab) -> None:
    project.makefile(
        ".yaml", rentcheck="audit:\n  expect_gpu: false\n  paths: {data: /}\n  budget: "
        "{checkpoint_bytes: 9000TiB}\n",
    )  # fmt: skip
    result = project.runpytest_subprocess(
        *FAST, "--rentcheck-audit", "box", f"--rentcheck-ssh-config={lab.ssh_config}"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*box: RC301 data=/: * free on /, below the budget*"])
    assert "Traceback" not in result.stdout.str()


def test_unreachable_host_fails_the_item_in_one_line(project: pytest.Pytester, lab: SshLab) -> None:
    result = project.runpytest_subprocess(
        *FAST, "--rentcheck-audit", "box-unknown", f"--rentcheck-ssh-config={lab.ssh_config}"
    )
    result.assert_outcomes(failed=1, errors=1, passed=1)  # the gate item; the fixture's user
    result.stdout.fnmatch_lines(["*box-unknown: host key of box-unknown * is unknown*"])
    assert "Traceback" not in result.stdout.str()


def test_without_the_gate_marked_tests_are_skipped(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the audit gate was not asked for*"])

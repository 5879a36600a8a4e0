"""How the resume gate spreads its runs over the CPUs (the runs are CPU-bound torch starts)."""

from __future__ import annotations

from rentcheck.run.resume import _run_in_lanes, plan_lanes

# kill chain (SIGKILL, SIGTERM, final: 3 runs), save chain (2 runs), reference (1 run)
LENGTHS = [3, 2, 1]


def test_two_cpus_put_the_reference_behind_the_shorter_chain() -> None:
    assert plan_lanes(LENGTHS, cpus=2) == [[0], [1, 2]]


def test_more_cpus_run_side_by_side_and_one_cpu_in_order() -> None:
    assert plan_lanes(LENGTHS, cpus=8) == [[0], [1], [2]]
    assert plan_lanes(LENGTHS, cpus=1) == [[0, 1, 2]]
    assert plan_lanes([2, 2], cpus=2) == [[0], [1]]  # tests that bring their own reference


def test_results_come_back_in_job_order() -> None:
    jobs = [(n, lambda n=n: f"job{n}") for n in LENGTHS]
    assert _run_in_lanes(jobs, cpus=2) == ["job3", "job2", "job1"]

"""pytest adapter for the pull and teardown gates: one item per pull, one per teardown.

``pytest --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT`` pulls as ``rentcheck pull`` does
(roster on the box, resumable transfer, verify, PULL_VERIFIED.json on success) and fails with
one line per blocking finding. ``pytest --rentcheck-teardown LOCAL_ROOT --rentcheck-host H
--rentcheck-profile P`` judges the teardown gate as ``rentcheck teardown`` does (the box
re-read now; prerequisites from the ledger); it passes only with ``--rentcheck-approve``,
since no one can type the platform's verb into a test run. Settings come from the project;
the controller writes the ledger. Nothing heavy is imported until an item runs.
"""

from __future__ import annotations

import os

import pytest

from rentcheck.gates.pytest_items import GateItem

__all__ = ["PullItem", "TeardownItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rentcheck")
    group.addoption(
        "--rentcheck-pull",
        action="append",
        default=[],
        metavar="HOST:REMOTE_ROOT=LOCAL_ROOT",
        help="run the pull gate: bring REMOTE_ROOT home into LOCAL_ROOT and verify; repeatable",
    )
    group.addoption(
        "--rentcheck-teardown",
        action="append",
        default=[],
        metavar="LOCAL_ROOT",
        help="run the teardown gate for the verified pull in LOCAL_ROOT (with --rentcheck-host)",
    )
    group.addoption("--rentcheck-host", metavar="HOST", help="the box teardown re-reads")
    group.addoption("--rentcheck-profile", metavar="NAME", help="the platform (teardown)")
    group.addoption(
        "--rentcheck-approve",
        action="store_true",
        help="the person approved the platform's meter-stop action (teardown; recorded)",
    )


def _split(given: str) -> tuple[str, str, str]:
    source, sep, local = given.rpartition("=")
    host, colon, remote = source.partition(":")
    if not sep or not colon or not host or not remote or not local:
        raise pytest.UsageError(
            f"--rentcheck-pull {given!r}: use HOST:REMOTE_ROOT=LOCAL_ROOT "
            "(e.g. mybox:/root/run=results, or local:/data/run=results)"
        )
    return host, remote, local


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import requested_gates

    base = str(config.invocation_params.dir)
    pulls = config.getoption("rentcheck_pull")
    downs = config.getoption("rentcheck_teardown")
    requested = requested_gates(config)
    if "pull" in requested and not pulls:
        raise pytest.UsageError("the pull gate needs --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT")
    if "teardown" in requested and not downs:
        raise pytest.UsageError("the teardown gate needs --rentcheck-teardown LOCAL_ROOT")
    for given in dict.fromkeys(pulls):
        host, remote, local = _split(given)
        pull = PullItem.from_parent(session, name=f"rentcheck-pull[{given}]")
        pull.setup_gate("pull", host)
        pull.remote_root, pull.local_root = remote, os.path.join(base, local)
        items.append(pull)
    for given in dict.fromkeys(downs):
        if not config.getoption("rentcheck_host"):
            raise pytest.UsageError("--rentcheck-teardown needs --rentcheck-host HOST (or local)")
        down = TeardownItem.from_parent(session, name=f"rentcheck-teardown[{given}]")
        down.setup_gate("teardown", config.getoption("rentcheck_host"))
        down.local_root = os.path.join(base, given)
        items.append(down)


class PullItem(GateItem):
    remote_root: str
    local_root: str

    def runtest(self) -> None:
        from rentcheck.gates.judge import GateResult, judge
        from rentcheck.gates.pytest_items import load_project_config
        from rentcheck.pull.gate import run_verify
        from rentcheck.pull.marker import write_verified_marker
        from rentcheck.pull.pull_run import PullRequest, pull_to
        from rentcheck.pull.settings import verify_settings

        config = load_project_config(self.config)
        assert self.host is not None  # noqa: S101 - set at collection
        outcome = pull_to(PullRequest(self.host, self.remote_root, self.local_root))
        findings = list(outcome.findings)
        if outcome.transferred:
            settings = verify_settings(config)
            result = run_verify(self.local_root, settings)
            findings += result.findings
            gate = GateResult("verify", list(result.findings), advisory=settings.advisory)
            verdict = judge(config, gate, section="verify")
            if verdict.passed:
                source = {"host": self.host, "remote_root": outcome.box_root}
                write_verified_marker(
                    result,
                    fail_level=verdict.fail_level,
                    allow=settings.advisory,
                    extra={"settings": settings.policy(), "source": source},
                )
        self.raise_if_failing(config, GateResult("pull", findings, host=self.host))

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name


class TeardownItem(GateItem):
    local_root: str

    def runtest(self) -> None:
        from rentcheck.gates.pytest_items import load_project_config
        from rentcheck.gates.run import GateRun
        from rentcheck.pull.teardown_gate import (
            TeardownRequest,
            teardown_manifest,
            teardown_result,
        )

        config = load_project_config(self.config)
        request = TeardownRequest(
            verified=self.local_root,
            host=self.host,
            profile=self.config.getoption("rentcheck_profile"),
            approve=bool(self.config.getoption("rentcheck_approve")),
        )
        manifest = teardown_manifest(request)
        run = GateRun(config, "teardown", host=self.host, manifest=manifest, via="pytest")
        self.raise_if_failing(config, run.with_order(teardown_result(config, request, run)))

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name

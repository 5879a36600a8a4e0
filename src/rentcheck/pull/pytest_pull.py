"""pytest adapter for the pull and teardown gates: one item per pull, one per teardown.

``pytest --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT`` pulls as ``rentcheck pull`` does
(roster on the box, resumable transfer, verify, PULL_VERIFIED.json on success) and fails with
one line per blocking finding. ``pytest --rentcheck-gate pull --rentcheck-hosts all|TAG``
makes one such item per inventory host (``rentcheck-pull[NAME]``), from the host's
``remote_root`` into its own folder (``rentcheck.box.fleet_pull``, as ``rentcheck pull
--hosts``), judged with the host's settings; asked for as the pull phase, these items are the
verify gate's too. ``pytest --rentcheck-teardown LOCAL_ROOT --rentcheck-host H
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


@pytest.hookimpl(tryfirst=True)  # before xdist's hook reads the items' xdist_group marks
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    from rentcheck.gates.pytest_items import requested_gates

    base = str(config.invocation_params.dir)
    pulls = config.getoption("rentcheck_pull")
    downs = config.getoption("rentcheck_teardown")
    requested = requested_gates(config)
    fleet = "pull" in requested and bool(config.getoption("rentcheck_hosts"))
    if "pull" in requested and not pulls and not fleet:
        raise pytest.UsageError(
            "the pull gate needs --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT, or "
            "--rentcheck-hosts all|TAG (each host's remote_root and local_root)"
        )
    if fleet:
        _add_host_pulls(session, items)
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


def _add_host_pulls(session: pytest.Session, items: list[pytest.Item]) -> None:
    """One pull item per inventory host ``--rentcheck-hosts`` picks, in its host's group,
    after the host's audit, launch and watch items."""
    from rentcheck.box.fleet_pull import pull_places
    from rentcheck.box.pytest_gate import inventory_hosts
    from rentcheck.errors import RentcheckError
    from rentcheck.gates.pytest_items import ALSO_PROPERTY, load_project_config, order_by_phase

    config = session.config
    try:
        places = pull_places(load_project_config(config), inventory_hosts(config))
    except RentcheckError as exc:
        raise pytest.UsageError(f"--rentcheck-gate pull --rentcheck-hosts: {exc}") from None
    # Asked for as the pull phase (pull and verify), without --rentcheck-verify: these items
    # verify what they brought, so they are the verify gate's items too.
    verifies = serves_verify(config) and not config.getoption("rentcheck_verify")
    for place in places:
        pull = PullItem.from_parent(session, name=f"rentcheck-pull[{place.host.name}]")
        pull.setup_gate("pull", place.host.name)
        pull.inventory_host = place.host
        pull.remote_root, pull.local_root = place.remote_root, place.local_root
        if verifies:
            pull.user_properties.append((ALSO_PROPERTY, "verify"))
        items.append(pull)
    order_by_phase(items)


def serves_verify(config: pytest.Config) -> bool:
    """Whether the per-host pull items are the verify gate's items in this run."""
    from rentcheck.gates.pytest_items import requested_gates

    wanted = requested_gates(config)
    return "pull" in wanted and "verify" in wanted and bool(config.getoption("rentcheck_hosts"))


class PullItem(GateItem):
    remote_root: str
    local_root: str

    def runtest(self) -> None:
        from rentcheck.box.fleet import Host, host_settings
        from rentcheck.box.fleet_run import named_for
        from rentcheck.commands.pull import judged_away
        from rentcheck.gates.judge import GateResult, judge
        from rentcheck.gates.pytest_items import load_project_config
        from rentcheck.pull.gate import run_verify
        from rentcheck.pull.marker import write_verified_marker
        from rentcheck.pull.pull_run import PullRequest, pull_to
        from rentcheck.pull.settings import verify_settings

        assert self.host is not None  # noqa: S101 - set at collection
        # Reached like the host's audit: its alias, its (or the option's) ssh_config.
        host = self.inventory_host or Host(self.host, self.host, (), {})
        given = self.config.getoption("rentcheck_ssh_config", None)
        config, box = host_settings(
            load_project_config(self.config), host, {"ssh_config": given} if given else None
        )
        request = PullRequest(
            host.alias,
            self.remote_root,
            self.local_root,
            ssh_config=box.ssh_config,
            connect_timeout=box.connect_timeout,
        )
        outcome = pull_to(request)
        findings = list(outcome.findings)
        if outcome.transferred:
            settings = verify_settings(config)
            result = run_verify(self.local_root, settings)
            findings += result.findings
            gate = GateResult("verify", list(result.findings), advisory=settings.advisory)
            verdict = judge(config, gate, section="verify")
            if verdict.passed:
                source = {"host": host.alias, "remote_root": outcome.box_root}
                write_verified_marker(
                    result,
                    fail_level=verdict.fail_level,
                    allow=settings.advisory | judged_away(result.findings, verdict),
                    extra={"settings": settings.policy(), "source": source},
                )
        findings = named_for(host, findings)
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

"""pytest adapter for the pull and teardown gates: one item per pull, one per teardown.

``pytest --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT`` pulls as ``rentcheck pull`` does
(roster on the box, resumable transfer, verify, PULL_VERIFIED.json on success) and fails with
one line per blocking finding. ``pytest --rentcheck-teardown LOCAL_ROOT --rentcheck-host H
--rentcheck-profile P`` judges the teardown gate as ``rentcheck teardown`` does (the box
re-read now; prerequisites from the ledger); it passes only with ``--rentcheck-approve``,
since no one can type the platform's verb into a test run.

With ``--rentcheck-hosts all|TAG``, ``--rentcheck-gate pull`` makes one pull item per
inventory host (``rentcheck-pull[NAME]``), from its ``remote_root`` into its own folder
(``rentcheck.box.fleet_pull``, as ``rentcheck pull --hosts``), judged with the host's
settings; asked for as the pull phase, these items are the verify gate's too.
``--rentcheck-gate teardown`` makes one teardown item per host for the verified pull in its
folder, re-read at its alias, with its ``profile``: in a later run than the pull, since the
ledger that holds the pull's verify is written when a run ends. Settings come from the
project; the controller writes the ledger. Nothing heavy is imported until an item runs.
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
    fleet = bool(config.getoption("rentcheck_hosts"))
    if "pull" in requested and not pulls and not fleet:
        raise pytest.UsageError(
            "the pull gate needs --rentcheck-pull HOST:REMOTE_ROOT=LOCAL_ROOT, or "
            "--rentcheck-hosts all|TAG (each host's remote_root and local_root)"
        )
    if "teardown" in requested and not downs and not fleet:
        raise pytest.UsageError(
            "the teardown gate needs --rentcheck-teardown LOCAL_ROOT, or --rentcheck-hosts "
            "all|TAG (each host's pulled folder)"
        )
    if fleet and ("pull" in requested or ("teardown" in requested and not downs)):
        _add_host_items(session, items, pull="pull" in requested, teardown=not downs)
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


def _add_host_items(
    session: pytest.Session, items: list[pytest.Item], *, pull: bool, teardown: bool
) -> None:
    """A pull item (and a teardown item) per inventory host ``--rentcheck-hosts`` picks, in
    its host's group, after the host's audit, launch and watch items; from the host's
    remote root into its own folder (``rentcheck.box.fleet_pull``)."""
    from rentcheck.box.fleet_pull import local_folders, pull_places
    from rentcheck.box.pytest_gate import inventory_hosts
    from rentcheck.errors import RentcheckError
    from rentcheck.gates.pytest_items import (
        ALSO_PROPERTY,
        load_project_config,
        order_by_phase,
        requested_gates,
    )

    config = session.config
    teardown = teardown and "teardown" in requested_gates(config)
    try:
        project, hosts = load_project_config(config), inventory_hosts(config)
        places = pull_places(project, hosts) if pull else []
        folders = local_folders(project, hosts)
    except RentcheckError as exc:
        raise pytest.UsageError(f"--rentcheck-hosts: {exc}") from None
    # Asked for as the pull phase (pull and verify), without --rentcheck-verify: these items
    # verify what they brought, so they are the verify gate's items too.
    verifies = serves_verify(config) and not config.getoption("rentcheck_verify")
    for place in places:
        item = PullItem.from_parent(session, name=f"rentcheck-pull[{place.host.name}]")
        item.setup_gate("pull", place.host.name)
        item.inventory_host = place.host
        item.remote_root, item.local_root = place.remote_root, place.local_root
        if verifies:
            item.user_properties.append((ALSO_PROPERTY, "verify"))
        items.append(item)
    for host in hosts if teardown else []:
        # The box is re-read where the pull recorded it (the marker's source).
        down = TeardownItem.from_parent(session, name=f"rentcheck-teardown[{host.name}]")
        down.setup_gate("teardown", host.name)
        down.inventory_host = host
        down.local_root = folders[host.name]
        items.append(down)
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
        from rentcheck.box.fleet_run import named_for
        from rentcheck.gates.judge import GateResult
        from rentcheck.gates.pytest_items import MANIFEST_PROPERTY
        from rentcheck.pull.pull_run import PullRequest, pull_to
        from rentcheck.pull.settings import verify_settings
        from rentcheck.pull.verify_gate import verify_gate

        host, config, box = self.reached()  # as the host's audit reaches it: its alias
        request = PullRequest(
            host.alias,
            self.remote_root,
            self.local_root,
            ssh_config=box.ssh_config,
            connect_timeout=box.connect_timeout,
        )
        outcome = pull_to(request)
        findings = list(outcome.findings)
        seen = 0
        if outcome.transferred:
            source = {"host": host.alias, "remote_root": outcome.box_root}
            # The controller records (GateRecorder): this item's outcome is verify's too.
            _, verified, _ = verify_gate(
                config,
                verify_settings(config),
                self.local_root,
                marker_extra={"source": source},
                record=False,
                via="pytest",
            )
            findings += verified.findings
            seen = verified.files_checked
            manifest = verified.evidence.get("manifest")
            if manifest:  # the ledger's evidence: teardown matches it
                self.user_properties.append((MANIFEST_PROPERTY, manifest))
        findings = named_for(host, findings)
        self.raise_if_failing(
            config, GateResult("pull", findings, host=self.host, files_checked=seen)
        )

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name


class TeardownItem(GateItem):
    local_root: str

    def runtest(self) -> None:
        from rentcheck.box.fleet_run import named_for
        from rentcheck.gates.pytest_items import MANIFEST_PROPERTY
        from rentcheck.gates.run import GateRun
        from rentcheck.pull.teardown_gate import (
            TeardownRequest,
            teardown_manifest,
            teardown_result,
        )

        # An inventory host is re-read at its alias, with its ssh_config, and its own
        # profile (the audit key) unless --rentcheck-profile names one.
        host, config, box = self.reached()
        profile = self.config.getoption("rentcheck_profile")
        if self.inventory_host is not None:
            profile = profile or self.inventory_host.overrides.get("profile")
        request = TeardownRequest(
            verified=self.local_root,
            host=host.alias,
            profile=profile,
            approve=bool(self.config.getoption("rentcheck_approve")),
            ssh_config=box.ssh_config,
            connect_timeout=box.connect_timeout,
        )
        manifest = teardown_manifest(request)
        if manifest is not None:
            self.user_properties.append((MANIFEST_PROPERTY, manifest))
        run = GateRun(config, "teardown", host=self.host, manifest=manifest, via="pytest")
        result = teardown_result(config, request, run)
        result.findings = named_for(host, result.findings)
        result.host = self.host
        self.raise_if_failing(config, run.with_order(result))

    def reportinfo(self) -> tuple[str, None, str]:
        return self.name, None, self.name

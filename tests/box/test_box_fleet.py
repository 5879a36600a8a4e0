"""A fleet in pytest: the ``[tool.rentcheck.hosts]`` inventory gives one audit item per host;
under ``-n 4 --dist loadgroup`` each host is audited over one SSH connection, and a host that
fails (unreachable, budget too small) fails only its own item."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sshdkit import Sshd, SshLab, keygen, start_sshd

from rentcheck.box.fleet import Host, inventory, select_hosts
from rentcheck.config import load_config
from rentcheck.errors import ConfigError, UsageError

FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
NAMES = ("h1", "h2", "h3-small", "h4-down")


@pytest.fixture
def fleet(lab: SshLab, tmp_path: Path) -> Iterator[tuple[dict[str, Sshd], Path]]:
    """Four real sshd on 127.0.0.1 (h4-down is stopped before the run), with an ssh_config."""
    servers: dict[str, Sshd] = {}
    known, blocks = [], []
    try:
        for name in NAMES:
            pub = keygen(tmp_path / f"{name}_host")
            servers[name] = start_sshd(
                tmp_path / name, lab.root, name, tmp_path / f"{name}_host", pub
            )
            known.append(f"[127.0.0.1]:{servers[name].port} {pub}")
        (tmp_path / "known_hosts").write_text("\n".join(known) + "\n")
        for name, server in servers.items():
            blocks.append(lab.host_block(name, server.port, tmp_path / "known_hosts"))
        ssh_config = tmp_path / "ssh_config"
        ssh_config.write_text("\n".join(blocks))
        servers["h4-down"].stop()
        yield servers, ssh_config
    finally:
        for server in servers.values():
            server.stop()


PYPROJECT = """
[tool.pytest.ini_options]

[tool.rentcheck.audit]
expect_gpu = false

[tool.rentcheck.hosts.h1]
tags = ["spot"]

[tool.rentcheck.hosts.h2]
tags = ["spot", "a100"]

[tool.rentcheck.hosts.h3-small]
tags = ["spot"]
paths = { data = "/" }
budget = { checkpoint_bytes = "9000TiB" }

[tool.rentcheck.hosts.h4-down]
tags = ["a100"]
"""


def test_four_hosts_under_xdist(
    pytester: pytest.Pytester, fleet: tuple[dict[str, Sshd], Path]
) -> None:
    servers, ssh_config = fleet
    pytester.makefile(".toml", pyproject=PYPROJECT)
    result = pytester.runpytest_subprocess(
        *FAST, "-n", "4", "--dist", "loadgroup", "--rentcheck-gate", "audit",
        "--rentcheck-hosts", "all", f"--rentcheck-ssh-config={ssh_config}", "-rf",
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    # -rf names only failures: the two good hosts must not appear.
    assert "rentcheck-audit[h1]" not in out and "rentcheck-audit[h2]" not in out
    result.stdout.fnmatch_lines(["*h3-small: RC301 data=/: * free on /, below the budget*"])
    result.stdout.fnmatch_lines(
        ["rentcheck-audit?h4-down?: cannot reach h4-down (127.0.0.1:*): connection refused*"]
    )
    assert "Traceback" not in out
    summary = [line for line in out.splitlines() if line.startswith("rentcheck audit gate:")]
    assert summary == ["rentcheck audit gate: FAILED (2 failed, 2 passed)"]
    for name in ("h1", "h2", "h3-small"):
        assert servers[name].log_text().count("Accepted publickey") == 1, name
    assert "Accepted publickey" not in servers["h4-down"].log_text()


def test_tag_and_k_pick_hosts(
    pytester: pytest.Pytester, fleet: tuple[dict[str, Sshd], Path]
) -> None:
    _, ssh_config = fleet
    pytester.makefile(".toml", pyproject=PYPROJECT)
    tagged = pytester.runpytest_subprocess(
        *FAST, "--rentcheck-hosts", "a100", f"--rentcheck-ssh-config={ssh_config}", "-v"
    )
    tagged.assert_outcomes(passed=1, failed=1)  # h2 and h4-down
    picked = pytester.runpytest_subprocess(
        *FAST, "--rentcheck-hosts", "all", "-k", "h2", f"--rentcheck-ssh-config={ssh_config}"
    )
    picked.assert_outcomes(passed=1)
    unknown = pytester.runpytest_subprocess(*FAST, "--rentcheck-hosts", "h100")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(
        ["*--rentcheck-hosts: --hosts h100: no host has that name or tag*"]
    )


def test_inventory_is_validated(tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text(
        "hosts:\n  a: {alias: box-a, tags: [spot]}\n  b: {budget: {keep: 2}}\n"
    )
    hosts = inventory(load_config(str(tmp_path)))
    assert hosts == (
        Host("a", "box-a", ("spot",), {}),
        Host("b", "b", (), {"budget": {"keep": 2}}),
    )
    assert [h.name for h in select_hosts(hosts, ["spot", "b"])] == ["a", "b"]
    with pytest.raises(UsageError, match="no host has that name or tag"):
        select_hosts(hosts, ["gpu"])
    (tmp_path / "rentcheck.yaml").write_text("hosts:\n  a: {budgte: 1}\n")
    with pytest.raises(ConfigError, match=r"hosts\.a\.budgte .*unknown key"):
        inventory(load_config(str(tmp_path)))

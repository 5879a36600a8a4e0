"""``[tool.rentcheck.audit]`` validation and the ``--path``/``--budget`` options."""

from __future__ import annotations

from pathlib import Path

import pytest

from rentcheck.box.settings import GIB, Budget, audit_settings, format_size, parse_size
from rentcheck.config import load_config
from rentcheck.errors import ConfigError, UsageError


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GiB", 8 * GIB),
        ("8 gib", 8 * GIB),
        ("2G", 2_000_000_000),
        ("500MB", 500_000_000),
        ("1.5KiB", 1536),
        (4096, 4096),
        ("123", 123),
    ],
)
def test_parse_size(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "8iB", "-1", True])
def test_parse_size_refuses(text: object) -> None:
    with pytest.raises(ValueError):
        parse_size(text)  # type: ignore[arg-type]


def test_format_size() -> None:
    assert format_size(512) == "512 B"
    assert format_size(3 * GIB) == "3.0 GiB"
    assert format_size(None) == "unknown"


def _config(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "rentcheck.yaml").write_text(text)
    return load_config(str(tmp_path))


def test_config_section_becomes_settings(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "audit:\n"
        "  paths: {data: /root/autodl-tmp, durable: /root/autodl-fs}\n"
        "  budget: {checkpoint_bytes: 8GiB, keep: 3, scratch_bytes: 20GiB}\n"
        "  durable_mounts: [/root/autodl-fs]\n"
        "  dataloader_workers: 8\n  worker_memory_bytes: 3GiB\n  threads: 16\n"
        "  expect_gpu: true\n  max_inode_use: 0.9\n  timeout: 90\n",
    )
    settings = audit_settings(config, paths=["data=/mnt/data", "scratch=/tmp/s"])
    assert settings.paths == {
        "data": "/mnt/data",
        "durable": "/root/autodl-fs",
        "scratch": "/tmp/s",
    }
    assert settings.budget.total == 44 * GIB
    assert settings.durable_mounts == ("/root/autodl-fs",)
    assert (settings.dataloader_workers, settings.worker_memory_bytes) == (8, 3 * GIB)
    assert settings.expect_gpu is True and settings.max_inode_use == 0.9
    assert settings.timeout == 90.0


def test_budget_option_total_or_parts(tmp_path: Path) -> None:
    config = _config(tmp_path, "audit:\n  budget: {checkpoint_bytes: 1GiB, keep: 2}\n")
    assert audit_settings(config, budget="100GiB").budget.total == 100 * GIB
    parts = audit_settings(config, budget="checkpoint=4GiB,keep=5,scratch=1GiB").budget
    assert parts == Budget(checkpoint_bytes=4 * GIB, keep=5, scratch_bytes=GIB)
    for bad in ("lots", "checkpoint=x", "nope=1"):
        with pytest.raises(UsageError):
            audit_settings(config, budget=bad)
    with pytest.raises(UsageError, match="ROLE=PATH"):
        audit_settings(config, paths=["/no/role"])


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("audit:\n  treads: 4\n", "audit.treads"),
        ("audit:\n  threads: many\n", "audit.threads"),
        ("audit:\n  threads: 2.5\n", "audit.threads"),
        ("audit:\n  max_inode_use: 95\n", "audit.max_inode_use"),
        ("audit:\n  expect_gpu: yes-please\n", "audit.expect_gpu"),
        ("audit:\n  paths: [/a]\n", "audit.paths"),
        ("audit:\n  budget: {checkpoint: 1}\n", "audit.budget.checkpoint"),
        ("audit:\n  budget: {keep: 0}\n", "audit.budget.keep"),
        ("audit:\n  worker_memory_bytes: lots\n", "audit.worker_memory_bytes"),
        ("audit:\n  caches: [1, 2]\n", "audit.caches"),
    ],
)
def test_bad_values_name_the_key_and_the_file(tmp_path: Path, text: str, named: str) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")) as caught:
        audit_settings(config)
    assert "rentcheck.yaml" in str(caught.value)


def test_ssh_config_in_the_config_file_is_relative_to_it(tmp_path: Path) -> None:
    config = _config(tmp_path, "audit:\n  ssh_config: ops/ssh_config\n")
    assert audit_settings(config).ssh_config == str(tmp_path / "ops" / "ssh_config")

"""The host inventory: ``[tool.rentcheck.hosts.NAME]`` tables (or ``hosts:`` in rentcheck.yaml),
one per box, each with the audit settings that differ on that box.

    [tool.rentcheck.hosts.a100-spot]
    alias = "runpod-a100"        # the ssh alias (default: the table's name; "local" for here)
    tags = ["spot", "a100"]
    profile = "runpod"
    paths = { data = "/workspace" }
    budget = { checkpoint_bytes = "40GiB", keep = 3 }

Any key of ``[tool.rentcheck.audit]`` may appear; it replaces that key for this host only.
``select_hosts(hosts, "all")`` takes every host, ``select_hosts(hosts, "spot")`` those tagged
(or named) ``spot``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.box.settings import KEYS as AUDIT_KEYS
from rentcheck.box.settings import SECTION as AUDIT_SECTION
from rentcheck.box.settings import AuditSettings, audit_settings
from rentcheck.config import INVENTORY, Config, section_error, with_section_values
from rentcheck.errors import UsageError

__all__ = ["Host", "host_settings", "inventory", "select_hosts"]

HOST_KEYS = ("alias", "tags")


@dataclass(frozen=True)
class Host:
    name: str  # the inventory key: item names, report rows and the ledger use it
    alias: str  # what is connected to: an ssh alias, or "local"
    tags: tuple[str, ...]
    overrides: Mapping[str, Any]  # [tool.rentcheck.audit] keys that differ on this host


def inventory(config: Config) -> tuple[Host, ...]:
    """Every host of the inventory, in file order; a malformed entry is a ConfigError."""
    hosts: list[Host] = []
    for name, table in config.section(INVENTORY).items():
        if not isinstance(table, Mapping):
            raise section_error(
                config,
                INVENTORY,
                str(name),
                "must be a table",
                f"write [tool.rentcheck.hosts.{name}]",
            )
        unknown = [k for k in table if k not in HOST_KEYS and k not in AUDIT_KEYS]
        if unknown:
            raise section_error(
                config, INVENTORY, f"{name}.{unknown[0]}", "unknown key",
                "a host takes alias, tags and the keys of [tool.rentcheck.audit]",
            )  # fmt: skip
        alias = table.get("alias", name)
        tags = table.get("tags", [])
        if not isinstance(alias, str) or not alias:
            raise section_error(config, INVENTORY, f"{name}.alias", "must be a non-empty string")
        if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
            raise section_error(config, INVENTORY, f"{name}.tags", "must be a list of strings")
        overrides = {k: v for k, v in table.items() if k not in HOST_KEYS}
        hosts.append(Host(str(name), alias, tuple(tags), overrides))
    return tuple(hosts)


def select_hosts(hosts: Sequence[Host], wanted: Iterable[str]) -> list[Host]:
    """The hosts that ``all``, a tag or a name picks, each once, in inventory order."""
    wanted = list(wanted)
    if not hosts:
        raise UsageError(
            f"--hosts {','.join(wanted)}: the project has no host inventory",
            hint="add [tool.rentcheck.hosts.NAME] tables (alias, tags, paths, budget)",
        )
    chosen: dict[str, Host] = {}
    for word in wanted:
        hits = [h for h in hosts if word in ("all", h.name) or word in h.tags]
        if not hits:
            tags = sorted({t for h in hosts for t in h.tags})
            raise UsageError(
                f"--hosts {word}: no host has that name or tag",
                hint="known: all, " + ", ".join([h.name for h in hosts] + tags),
            )
        chosen.update((h.name, h) for h in hits)
    return [h for h in hosts if h.name in chosen]


def host_settings(
    config: Config,
    host: Host,
    overrides: Mapping[str, Any] | None = None,
    *,
    paths: Sequence[str] = (),
    budget: str | None = None,
) -> tuple[Config, AuditSettings]:
    """The project config with this host's audit keys laid over ``[tool.rentcheck.audit]``,
    and the audit settings read from it (validated like the section itself); ``paths``,
    ``budget`` and ``overrides`` are the command line's, applied to every host."""
    merged = with_section_values(config, AUDIT_SECTION, host.overrides, f"hosts.{host.name}")
    return merged, audit_settings(merged, paths=paths, budget=budget, overrides=overrides)

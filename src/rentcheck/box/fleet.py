"""The host inventory: ``[tool.rentcheck.hosts.NAME]`` tables (or ``hosts:`` in rentcheck.yaml),
one per box, each with the audit settings that differ on that box.

    [tool.rentcheck.hosts.a100-spot]
    alias = "runpod-a100"        # the ssh alias (default: the table's name; "local" for here)
    tags = ["spot", "a100"]
    profile = "runpod"
    paths = { data = "/workspace" }
    budget = { checkpoint_bytes = "40GiB", keep = 3 }

Any key of ``[tool.rentcheck.audit]`` may appear; it replaces that key for this host only.
``select`` and ``ignore`` (rule codes) judge every gate run on this host (audit, launch, watch,
pull, verify, teardown): ``ignore`` adds to each gate's own ``ignore``; ``select`` replaces
the selection of each gate whose codes it names (a gate it names none of keeps its own).
``remote_root`` and ``local_root`` say where the pull gate brings this host's run from and
to (``rentcheck.box.fleet_pull``). ``select_hosts(hosts, "all")`` takes every host,
``select_hosts(hosts, "spot")`` those tagged (or named) ``spot``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.box.settings import KEYS as AUDIT_KEYS
from rentcheck.box.settings import SECTION as AUDIT_SECTION
from rentcheck.box.settings import AuditSettings, audit_settings
from rentcheck.config import (
    INVENTORY,
    Config,
    code_matches,
    section_error,
    suggest_code,
    with_section_values,
)
from rentcheck.errors import UsageError

__all__ = ["Host", "host_config", "host_settings", "inventory", "select_hosts"]

SELECTION_KEYS = ("select", "ignore")
HOST_KEYS = ("alias", "tags", "remote_root", "local_root", *SELECTION_KEYS)
# The phases whose gates run once per host: a host's select/ignore judge them.
HOST_PHASES = ("audit", "launch", "watch", "pull", "teardown")


@dataclass(frozen=True)
class Host:
    name: str  # the inventory key: item names, report rows and the ledger use it
    alias: str  # what is connected to: an ssh alias, or "local"
    tags: tuple[str, ...]
    overrides: Mapping[str, Any]  # [tool.rentcheck.audit] keys that differ on this host
    remote_root: str | None = None  # the run directory on the box the pull gate brings home
    local_root: str | None = None  # where it goes (default: [tool.rentcheck.pull] local_root/NAME)
    select: tuple[str, ...] = ()  # rule codes this host's gates select (empty: their own)
    ignore: tuple[str, ...] = ()  # rule codes this host's gates ignore, besides their own


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
                "a host takes " + ", ".join(HOST_KEYS) + " and the keys of [tool.rentcheck.audit]",
            )  # fmt: skip
        alias = table.get("alias", name)
        if not isinstance(alias, str) or not alias:
            raise section_error(config, INVENTORY, f"{name}.alias", "must be a non-empty string")
        roots = {key: table.get(key) for key in ("remote_root", "local_root")}
        for key, value in roots.items():
            if value is not None and (not isinstance(value, str) or not value):
                raise section_error(config, INVENTORY, f"{name}.{key}", "must be a non-empty path")
        tags, select, ignore = (_strings(config, name, table, k) for k in ("tags", *SELECTION_KEYS))
        overrides = {k: v for k, v in table.items() if k not in HOST_KEYS}
        hosts.append(Host(str(name), alias, tags, overrides, **roots, select=select, ignore=ignore))
    if any(h.select or h.ignore for h in hosts):
        _check_codes(config, hosts)
    return tuple(hosts)


def _strings(config: Config, name: str, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise section_error(config, INVENTORY, f"{name}.{key}", "must be a list of strings")
    return tuple(value)


def _check_codes(config: Config, hosts: Sequence[Host]) -> None:
    """A host's select/ignore may name only codes of the gates that run per host: a typo
    must not switch a check off on one box silently."""
    from rentcheck.registry import all_rules

    codes = {code for found in host_gate_codes().values() for code in found}
    for host in hosts:
        for key in SELECTION_KEYS:
            for token in getattr(host, key):
                if any(code_matches(c, token) for c in codes):
                    continue
                rules = {c: r for c, r in all_rules().items() if c in codes}
                raise section_error(
                    config, INVENTORY, f"{host.name}.{key}",
                    f"{token!r} is no rule code of a gate that runs per host "
                    "(audit, launch, watch, pull, verify, teardown)",
                    suggest_code(token, rules),
                )  # fmt: skip


def host_gate_codes() -> dict[str, frozenset[str]]:
    """section -> the codes judged there, for each gate that runs once per host: its own
    rules and the installed rule packs' rules on it."""
    from rentcheck.gates.table import all_gates, gate_rule_codes
    from rentcheck.registry import box_checks, gate_checks

    found: dict[str, set[str]] = {}
    for gate in all_gates():
        if gate.section is None or gate.phase not in HOST_PHASES:
            continue
        codes = found.setdefault(gate.section, set())
        codes.update(gate_rule_codes(gate.name))
        codes.update(check.rule.code for check in gate_checks(gate.name))
        if gate.name == "audit":
            codes.update(check.rule.code for check in box_checks())
    return {section: frozenset(codes) for section, codes in found.items()}


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
    merged = host_config(config, host)
    return merged, audit_settings(merged, paths=paths, budget=budget, overrides=overrides)


def host_config(config: Config, host: Host) -> Config:
    """The project config as this host's gates are judged with: its audit keys laid over
    ``[tool.rentcheck.audit]``, its ``ignore`` added to and its ``select`` put in place of
    the selection of every per-host gate whose codes they name."""
    where = f"hosts.{host.name}"
    merged = with_section_values(config, AUDIT_SECTION, host.overrides, where)
    if not host.select and not host.ignore:
        return merged
    for section, codes in host_gate_codes().items():
        values: dict[str, Any] = {}
        ignore = [t for t in host.ignore if any(code_matches(c, t) for c in codes)]
        if ignore:
            own = merged.section(section).get("ignore", [])
            values["ignore"] = [*(own.split(",") if isinstance(own, str) else own), *ignore]
        select = [t for t in host.select if any(code_matches(c, t) for c in codes)]
        if select:
            values["select"] = select
        merged = with_section_values(merged, section, values, where)
    return merged

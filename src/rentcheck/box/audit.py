"""The audit rules (RC3xx, RC4xx): pure functions of (facts, settings, profile) -> findings.

Facts may be partial (the sh fallback probe, unreadable files); a rule whose fact is missing
stays silent, and RC316 reports the gap instead, so "unknown" never reads as "clean".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rentcheck.box.durable import ProfileView, durable_findings
from rentcheck.box.findings import dig, finding, percent
from rentcheck.box.gpu import gpu_findings
from rentcheck.box.mutation import mutation_findings
from rentcheck.box.settings import AuditSettings, format_size
from rentcheck.model import Finding

__all__ = ["evaluate"]

Facts = Mapping[str, Any]


def _paths(facts: Facts) -> list[tuple[str, Mapping[str, Any]]]:
    paths = facts.get("paths") or {}
    return [(r, f) for r, f in sorted(paths.items()) if isinstance(f, Mapping)]


def disk_budget(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    budget = settings.budget
    if budget.total <= 0:
        return []
    found = []
    for role, fact in _paths(facts):
        if budget.roles is not None and role not in budget.roles:
            continue
        free = dig(fact, "space", "bytes_free")
        if free is not None and free < budget.total:
            found.append(
                finding(
                    "RC301",
                    f"{role}={fact.get('path')}: {format_size(free)} free on "
                    f"{dig(fact, 'mount', 'mount_point')}, below the budget {budget.describe()}",
                    host,
                    role=role,
                    bytes_free=free,
                    budget_bytes=budget.total,
                )
            )
    return found


def inodes(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    found = []
    for role, fact in _paths(facts):
        total = dig(fact, "space", "inodes_total")
        free = dig(fact, "space", "inodes_free")
        if not total or free is None:
            continue  # no inode accounting (btrfs, some network filesystems)
        used = total - free
        low = settings.min_free_inodes and free < settings.min_free_inodes
        if used / total >= settings.max_inode_use or low:
            found.append(
                finding(
                    "RC302",
                    f"{role}={fact.get('path')}: {used:,} of {total:,} inodes used "
                    f"({percent(used, total)}), {free:,} free",
                    host,
                    role=role,
                    inodes_free=free,
                )
            )
    return found


def caches_on_small_disk(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    root_mount = dig(facts, "root", "mount", "mount_id")
    root_total = dig(facts, "root", "space", "bytes_total")
    found = []
    for cache in facts.get("caches") or []:
        total, free = dig(cache, "space", "bytes_total"), dig(cache, "space", "bytes_free")
        if not total or free is None:
            continue
        used = total - free
        on_root = root_mount is not None and dig(cache, "mount", "mount_id") == root_mount
        small_root = on_root and root_total is not None and root_total < settings.small_root_bytes
        full = used / total >= settings.nearly_full
        if not (small_root or full):
            continue
        where = cache["path"]
        if cache.get("is_symlink"):
            where += f" -> {cache.get('realpath')}"
        size = cache.get("size_bytes")
        held = f", holds {format_size(size)}" if size else ""
        why = "the small root disk" if small_root else "a nearly full mount"
        found.append(
            finding(
                "RC303",
                f"{cache.get('name')} cache {where}{held} is on {why} "
                f"{dig(cache, 'mount', 'mount_point')} ({format_size(total)}, "
                f"{percent(used, total)} used)",
                host,
                cache=cache.get("name"),
                path=cache.get("path"),
            )
        )
    return found


def memory_and_cpu(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    found = []
    memory = facts.get("memory") or {}
    limit, total = memory.get("limit_bytes"), memory.get("mem_total_bytes")
    effective = min(v for v in (limit, total) if v) if (limit or total) else None
    need = settings.dataloader_workers * settings.worker_memory_bytes + settings.main_memory_bytes
    workers = settings.dataloader_workers and settings.worker_memory_bytes
    if workers and effective is not None and effective < need:
        found.append(
            finding(
                "RC305",
                f"memory limit {format_size(effective)} is below {settings.dataloader_workers}"
                f" workers x {format_size(settings.worker_memory_bytes)} + "
                f"{format_size(settings.main_memory_bytes)} main = {format_size(need)}",
                host,
                limit_bytes=effective,
                need_bytes=need,
            )
        )
    if memory.get("oom_kill"):
        found.append(
            finding(
                "RC306",
                f"this container's memory cgroup already OOM-killed {memory['oom_kill']} "
                "process(es) (baseline recorded)",
                host,
                oom_kill=memory["oom_kill"],
            )
        )
    cpu = facts.get("cpu") or {}
    cores = cpu.get("quota_cores") or cpu.get("nproc")
    if settings.threads and cores and cores < settings.threads:
        source = f"CPU quota {cores:g} cores" if cpu.get("quota_cores") else f"nproc {cores}"
        found.append(
            finding(
                "RC307",
                f"{source} is below the configured {settings.threads} threads",
                host,
                cores=cores,
            )
        )
    shm = facts.get("shm")
    if settings.dataloader_workers and "shm" in facts:
        size = (shm or {}).get("bytes_total")
        if size is None or size < settings.min_shm_bytes:
            found.append(
                finding(
                    "RC308",
                    f"/dev/shm is {format_size(size) if size is not None else 'missing'} with "  # noqa: S108
                    f"{settings.dataloader_workers} DataLoader workers (minimum "
                    f"{format_size(settings.min_shm_bytes)})",
                    host,
                    shm_bytes=size,
                )
            )
    return found


def detach_and_paths(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    found = []
    tools = facts.get("tools")
    if isinstance(tools, Mapping):
        detach = [t for t in ("tmux", "screen", "setsid") if tools.get(t)]
        if not detach:
            nohup = (
                " (only nohup, which keeps the job in the SSH session)"
                if tools.get("nohup")
                else ""
            )
            found.append(finding("RC314", f"no tmux, screen or setsid on the box{nohup}", host))
    for role, fact in _paths(facts):
        if fact.get("exists") is False:
            found.append(
                finding(
                    "RC315",
                    f"{role}={fact.get('path')} does not exist; measured on "
                    f"{fact.get('measured_at')}",
                    host,
                    role=role,
                )
            )
    return found


def unreadable(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    gpu_relevant = settings.gpu_expected(host) or dig(facts, "gpu", "nvidia_smi")
    found = []
    for entry in _unreadable(facts):
        name = str(entry.get("fact"))
        if name == "dmesg" and not gpu_relevant:
            continue
        found.append(
            finding("RC316", f"could not read {name}: {entry.get('why')}", host, fact=name)
        )
    return found


def requested_facts_missing(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    """A path or budget the user asked about that the answer says nothing of: never "clean"."""
    reported = {str(entry.get("fact")) for entry in _unreadable(facts)}
    given = facts.get("paths")
    paths: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    budget = settings.budget
    found = []
    for role, path in sorted(settings.paths.items()):
        fact = paths.get(role)
        if not isinstance(fact, Mapping):
            if f"paths.{role}" not in reported:
                found.append(
                    finding(
                        "RC316",
                        f"could not read paths.{role} ({path}): the probe's answer has no fact "
                        "for it",
                        host,
                        fact=f"paths.{role}",
                    )
                )
            continue
        counted = budget.total > 0 and (budget.roles is None or role in budget.roles)
        if counted and dig(fact, "space", "bytes_free") is None:
            found.append(
                finding(
                    "RC316",
                    f"could not read the free space of {role}={path}, so the budget "
                    f"{budget.describe()} is unchecked",
                    host,
                    fact=f"paths.{role}.space",
                )
            )
    return found


def _unreadable(facts: Facts) -> list[Mapping[str, Any]]:
    entries = facts.get("unreadable")
    return [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []


Rule = Callable[[Facts, AuditSettings, str], list[Finding]]
RULES: tuple[Rule, ...] = (
    disk_budget,
    inodes,
    caches_on_small_disk,
    memory_and_cpu,
    gpu_findings,
    detach_and_paths,
    unreadable,
    requested_facts_missing,
)


def plugin_findings(facts: Facts, settings: AuditSettings, host: str) -> list[Finding]:
    """The findings of the installed rule packs' box rules (``rentcheck.box_rule``)."""
    from rentcheck.registry import box_checks, run_plugin_checks

    checks = box_checks()
    if not checks:
        return []
    from rentcheck.record import replace
    from rentcheck.rulepack import BoxFacts

    box = BoxFacts(host=host, facts=facts, paths=dict(settings.paths))
    found = run_plugin_checks(checks, box)
    return [f if f.host else replace(f, host=host) for f in found]


def evaluate(
    facts: Facts, settings: AuditSettings, host: str, profile: ProfileView | None = None
) -> list[Finding]:
    """Every finding for one box, ordered by code."""
    found = [f for rule in RULES for f in rule(facts, settings, host)]
    found += durable_findings(facts, settings, host, profile)
    found += mutation_findings(facts, host)
    found += plugin_findings(facts, settings, host)
    return sorted(found, key=lambda f: (f.code, f.message))

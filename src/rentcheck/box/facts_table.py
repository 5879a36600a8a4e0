"""The audit's measured facts as a compact text table, printed above the findings.

What a person needs before launching: per path, free bytes and inodes against the budget;
the memory limit; the GPU and torch as the project's interpreter sees them; the detach tool.
Every value came from the box: the one emit path escapes it before a terminal sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rentcheck.box.findings import dig, percent
from rentcheck.box.gpu import parse_gpus
from rentcheck.box.settings import AuditSettings, format_size
from rentcheck.sanitise import sanitise
from rentcheck.textwidth import table

__all__ = ["facts_table"]


def _count(value: int | None) -> str:
    if value is None:
        return "?"
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return str(value)


def _budget_cell(free: int | None, role: str, settings: AuditSettings) -> str:
    budget = settings.budget
    counted = budget.total > 0 and (budget.roles is None or role in budget.roles)
    if not counted:
        return "-"
    if free is None:
        return f"{format_size(budget.total)} (free unknown)"
    verdict = "fits" if free >= budget.total else "SHORT"
    return f"{format_size(budget.total)} {verdict}"


def _path_rows(facts: Mapping[str, Any], settings: AuditSettings) -> list[list[str]]:
    rows = [["path", "mount", "free", "inodes free", "budget"]]
    paths = facts.get("paths")
    for role, fact in sorted(paths.items()) if isinstance(paths, Mapping) else []:
        if not isinstance(fact, Mapping):
            continue
        if fact.get("exists") is False:
            rows.append([f"{role}={fact.get('path')}", "(missing)", "", "", ""])
            continue
        free, total = dig(fact, "space", "bytes_free"), dig(fact, "space", "bytes_total")
        ifree, itotal = dig(fact, "space", "inodes_free"), dig(fact, "space", "inodes_total")
        mount = (
            f"{dig(fact, 'mount', 'mount_point') or '?'} ({dig(fact, 'mount', 'fstype') or '?'})"
        )
        space = f"{format_size(free)} of {format_size(total)}" if total else format_size(free)
        inodes = (
            f"{_count(ifree)} of {_count(itotal)} ({percent(itotal - ifree, itotal)} used)"
            if itotal and ifree is not None
            else "not counted"
        )
        rows.append(
            [f"{role}={fact.get('path')}", mount, space, inodes, _budget_cell(free, role, settings)]
        )
    # Escaped here as well as on the way out (it is idempotent) so the columns line up.
    return [[sanitise(cell) for cell in row] for row in rows] if len(rows) > 1 else []


def _memory(facts: Mapping[str, Any]) -> str:
    memory = facts.get("memory")
    if not isinstance(memory, Mapping):
        return "not read"
    limit, total = memory.get("limit_bytes"), memory.get("mem_total_bytes")
    if limit and total and limit < total:
        text = f"cgroup limit {format_size(limit)} (machine {format_size(total)})"
    elif total:
        text = f"{format_size(total)} (no cgroup limit below the machine's)"
    else:
        text = "unknown"
    return text + f", {memory.get('oom_kill') or 0} OOM kill(s) so far"


def _gpu(facts: Mapping[str, Any]) -> str:
    gpu = facts.get("gpu")
    gpus = parse_gpus(gpu.get("query")) if isinstance(gpu, Mapping) else []
    if gpus:
        names = ", ".join(f"{g.get('name')} ({g.get('memory.total')} MiB)" for g in gpus[:4])
        more = f" +{len(gpus) - 4} more" if len(gpus) > 4 else ""
        return f"{len(gpus)} x {names}{more}, driver {gpus[0].get('driver_version') or '?'}"
    if isinstance(gpu, Mapping) and not gpu.get("nvidia_smi"):
        return "none (no nvidia-smi)"
    return "none" if isinstance(gpu, Mapping) else "not probed (CPU box)"


def _torch(facts: Mapping[str, Any]) -> str | None:
    torch = facts.get("torch")
    if not isinstance(torch, Mapping):
        return None
    where = torch.get("python") or "?"
    if torch.get("error"):
        return f"not importable with {where}: {torch.get('error')}"
    cuda = "CUDA available" if torch.get("cuda_available") else "no CUDA"
    build = f", built for CUDA {torch['cuda']}" if torch.get("cuda") else ""
    return f"{torch.get('torch')} with {where}: {cuda}{build}"


def _detach(facts: Mapping[str, Any]) -> str:
    tools = facts.get("tools")
    if not isinstance(tools, Mapping):
        return "not read"
    found = [t for t in ("tmux", "screen", "setsid") if tools.get(t)]
    return (
        ", ".join(found)
        if found
        else "none (" + ("only nohup" if tools.get("nohup") else "no nohup") + ")"
    )


def facts_table(facts: Mapping[str, Any], settings: AuditSettings, host: str) -> tuple[str, ...]:
    """Lines: what was measured on ``host``, paths first, then the box-wide facts."""
    lines = [f"{host}: measured"]
    lines += table(_path_rows(facts, settings), indent="  ")
    box = [["memory", _memory(facts)], ["gpu", _gpu(facts)]]
    torch = _torch(facts)
    if torch is not None:
        box.append(["torch", torch])
    box.append(["detach", _detach(facts)])
    box = [[name, sanitise(value)] for name, value in box]
    lines += table(box, indent="  ")
    return tuple(lines)

"""The merged table of a fleet: one row per host, one column per rule code, with totals.

Used by ``rentcheck audit --hosts``, ``rentcheck watch --hosts`` and ``rentcheck merge``; pure
(rows in, lines out). Host names and reasons may come from other machines' reports, so every
cell is sanitised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rentcheck.sanitise import sanitise

__all__ = ["HostRow", "fleet_table"]


@dataclass
class HostRow:
    host: str
    exit_code: int  # 0 passed, 1 failing findings, 2 could not be checked, 3 dead (watch)
    counts: Mapping[str, int] = field(default_factory=dict)  # code -> findings
    reason: str = ""  # why the host could not be checked

    @property
    def status(self) -> str:
        return {0: "passed", 1: "failed", 3: "dead"}.get(self.exit_code, "error")


def fleet_table(rows: Sequence[HostRow]) -> list[str]:
    """``host  RC301 RC305 ... result`` rows, then a totals line."""
    codes = sorted({code for row in rows for code in row.counts})
    hosts = [sanitise(row.host) for row in rows]
    width = max([len("host"), *map(len, hosts)])
    cols = [max(len(code), 3) for code in codes]
    head = "  ".join(
        [f"{'host':<{width}}", *(f"{c:>{w}}" for c, w in zip(codes, cols, strict=True))]
    )
    lines = [head + "  result"]
    for name, row in zip(hosts, rows, strict=True):
        cells = [f"{row.counts.get(c, 0) or '-':>{w}}" for c, w in zip(codes, cols, strict=True)]
        result = row.status + (f": {sanitise(row.reason)}" if row.reason else "")
        lines.append("  ".join([f"{name:<{width}}", *cells]) + "  " + result)
    totals = [
        f"{sum(r.counts.get(c, 0) for r in rows):>{w}}" for c, w in zip(codes, cols, strict=True)
    ]
    states = ("passed", "failed", "dead", "error")
    tally = {s: sum(1 for r in rows if r.status == s) for s in states}
    summary = ", ".join(f"{n} {s}" for s, n in tally.items() if n)
    lines.append("  ".join([f"{'total':<{width}}", *totals]) + f"  {len(rows)} hosts: {summary}")
    return lines

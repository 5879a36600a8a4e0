"""``rentcheck report --markdown FILE``: the lifecycle for a CI job summary.

GitHub refuses a step summary over 1 MiB, so the page is cut below ``MAX_BYTES``: whole lines
only (a table cut between rows is still a table), the finding rows go first, and a last line
says how much was left out. Untrusted text is escaped for markdown *and* HTML (job summaries
render inline HTML) and kept on one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rentcheck.report.lifecycle import Lifecycle
from rentcheck.sanitise import sanitise

__all__ = ["MAX_BYTES", "render_markdown"]

MAX_BYTES = 1_000_000  # below GitHub's 1 MiB (1,048,576 bytes) step-summary limit
_MAX_CELL = 300  # characters of one message cell
_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")
_VERDICT_MARK = {"pass": "✅ pass", "fail": "❌ fail", "forced": "⚠️ forced", "ready": "🔵 ready"}


def _m(value: Any, limit: int = _MAX_CELL) -> str:
    """Untrusted text as one inert markdown table cell."""
    text = sanitise("" if value is None else str(value))  # no newline, no control character
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text)


def _size(value: Any) -> str:
    from rentcheck.box.settings import format_size

    return format_size(value) if isinstance(value, int) else "unknown"


def _timeline(life: Lifecycle) -> list[str]:
    lines = [
        "## Lifecycle",
        "",
        "| phase | gate | last verdict | when (UTC) | host |",
        "|---|---|---|---|---|",
    ]
    for g in life.gates:
        mark = _VERDICT_MARK.get(g.verdict or "", "not run" if g.verdict is None else _m(g.verdict))
        lines.append(
            f"| {_m(g.phase)} | {_m(g.name)} | {mark} | {_m(g.time or '')} | {_m(g.host or '')} |"
        )
    return [*lines, ""]


def _mounts(life: Lifecycle) -> list[str]:
    if not life.mounts:
        return []
    title = "## Disk budget per mount" + (f" ({_m(life.audit_host)})" if life.audit_host else "")
    lines = [title, "", "| role | path | mount | free | budget | verdict | inodes used |"]
    lines.append("|---|---|---|---|---|---|---|")
    for m in life.mounts:
        verdict = {True: "✅ fits", False: "❌ short", None: "no budget"}[m.within_budget]
        inodes = (
            f"{m.inodes_total - m.inodes_free:,} / {m.inodes_total:,}"
            if m.inodes_total and m.inodes_free is not None
            else "-"
        )
        budget = _size(m.budget_bytes) if m.budget_bytes else "-"
        lines.append(
            f"| {_m(m.role)} | {_m(m.path)} | {_m(m.mount_point)} | {_size(m.bytes_free)} "
            f"| {budget} | {verdict} | {inodes} |"
        )
    return [*lines, ""]


def _resume(life: Lifecycle) -> list[str]:
    if not life.resume:
        return []
    lines = ["## Resume: kill, checkpoint, relaunch", ""]
    lines += ["| scenario | killed after | checkpoint | relaunched at | steps compared |"]
    lines.append("|---|---|---|---|---|")
    for s in life.resume:
        mark = "✅" if s.passed else "❌" if s.ran else "not exercised"
        compared = "-" if s.compared is None else str(s.compared)
        if s.first_mismatch is not None:
            compared += f", first difference at step {s.first_mismatch}"
        relaunch = "failed" if s.relaunch_failed else str(s.relaunch_first or "-")
        lines.append(
            f"| {mark} {_m(s.name)} | {s.killed_after or '-'} | {s.durable or '-'} "
            f"| {relaunch} | {compared} |"
        )
    return [*lines, ""]


def _verify(life: Lifecycle) -> list[str]:
    if not life.verify_files:
        return []
    via = f", verified by `rentcheck {_m(life.verify_via)}`" if life.verify_via != "verify" else ""
    lines = [f"## Verified pull ({life.verify_count()}{via})", ""]
    lines += ["| file | bytes | SHA-256 | verdict |", "|---|---|---|---|"]
    for f in life.verify_files:
        digest = str(f.get("sha256") or "")[:16]
        lines.append(
            f"| {_m(f.get('path'))} | {_size(f.get('size'))} | {_m(digest)} "
            f"| {_m(f.get('verdict'))} |"
        )
    return [*lines, ""]


def _where(finding: Mapping[str, Any]) -> str:
    where = str(finding.get("path") or finding.get("host") or "")
    return where + (f":{finding.get('line')}" if finding.get("line") is not None else "")


def _findings(life: Lifecycle) -> list[str]:
    if not life.rules:
        return ["## Findings", "", "No findings in the gates' last reports.", ""]
    total = sum(len(g.findings) for g in life.rules)
    lines = [f"## Findings by rule ({total})", ""]
    for group in life.rules:
        title = f"{group.code} {group.name or ''}".strip()
        linked = f"[{_m(title)}]({group.doc_url})" if group.doc_url else _m(title)
        lines += [f"### {linked} ({_m(group.severity)}, {len(group.findings)})", ""]
        lines += ["| gate | where | message |", "|---|---|---|"]
        lines += [
            f"| {_m(gate)} | {_m(_where(f))} | {_m(f.get('message'))} |"
            for gate, f in group.findings
        ]
        lines.append("")
    return lines


def render_markdown(life: Lifecycle, max_bytes: int = MAX_BYTES) -> str:
    """The summary, cut at a line boundary so that it stays under ``max_bytes`` (UTF-8)."""
    head = [
        "# rentcheck report",
        "",
        f"{_m(life.project)}, generated {_m(life.generated_at)} by rentcheck {_m(life.version)}",
        "",
    ]
    head += [f"- ⚠️ {_m(p)}" for p in life.problems[:20]]
    lines = [*head, *_timeline(life), *_resume(life), *_mounts(life), *_verify(life)]
    lines += _findings(life)
    reserve = 200  # room for the line that says what was cut
    out: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        size = len(line.encode("utf-8")) + 1
        if used + size > max_bytes - reserve:
            left = len(lines) - index
            out.append("")
            out.append(
                f"*Cut here to stay under {max_bytes:,} bytes: {left:,} more line(s) left out; "
                "`rentcheck report --html FILE` has everything.*"
            )
            break
        out.append(line)
        used += size
    return "\n".join(out) + "\n"

"""``rentcheck report --html FILE``: one self-contained page of the project's lifecycle.

No network assets, no script: inline CSS only, and a Content-Security-Policy that forbids
loading anything, so the page renders the same offline and an injected tag could fetch
nothing. Every string from a run or a box goes through ``_e`` (terminal escapes made visible,
then HTML-escaped); the only links are rule pages built from codes rentcheck knows.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from rentcheck.report.lifecycle import Lifecycle, MountBar
from rentcheck.sanitise import sanitise

__all__ = ["render_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d232a;
background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 10px}
.meta{color:#5b6470;font-size:12px}
.phases{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px}
.phase{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:8px}
.phase h3{font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:#5b6470;
margin:0 0 6px}
.gate{display:flex;justify-content:space-between;gap:6px;padding:3px 6px;border-radius:5px;
margin:3px 0;font-size:13px}
.v-pass{background:#dcf5e3;color:#135c2b} .v-fail{background:#fde2e1;color:#8b1a13}
.v-forced{background:#fff1cc;color:#6b4d00} .v-ready{background:#e1ecfd;color:#17407e}
.v-none{background:#eef0f3;color:#6a727c}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e6}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eceff2;vertical-align:top;
font-size:13px} th{background:#f0f2f5}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;
word-break:break-all}
.bar{position:relative;height:16px;background:#e9ecef;border-radius:4px;overflow:hidden;
min-width:240px}
.bar span{position:absolute;top:0;bottom:0}
.used{background:#7a8796} .budget-ok{background:#7bc99a} .budget-short{background:#e5534b}
.bar .budget-ok,.bar .budget-short{min-width:3px}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;
border-radius:2px}
.rule{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:8px 12px;
margin:8px 0}
.rule h3{font-size:14px;margin:0 0 6px}
.sev{font-size:11px;padding:1px 6px;border-radius:9px;margin-left:6px}
.sev-error{background:#fde2e1;color:#8b1a13} .sev-warning{background:#fff1cc;color:#6b4d00}
.sev-note{background:#e1ecfd;color:#17407e}
.empty{color:#6a727c;font-style:italic}
.scroll{overflow-x:auto}
td.where{white-space:nowrap}
figure{margin:8px 0;background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:8px;
overflow-x:auto}
figure svg{width:100%;height:auto;display:block}
td.sha{word-break:break-all;min-width:18ch}
figcaption{font-size:12px;color:#5b6470}
@media (max-width:640px){main{padding:12px}.bar{min-width:120px}
th,td{padding:4px 5px;font-size:12px}
figure svg text{font-size:17px}}
ul.problems{color:#8b1a13}
"""


def _e(value: Any) -> str:
    """Untrusted text as inert HTML: control characters shown escaped, markup escaped."""
    return html.escape(sanitise("" if value is None else str(value)), quote=True)


def _size(value: int | None) -> str:
    from rentcheck.box.settings import format_size

    return format_size(value)


def _pct(part: float, whole: float) -> str:
    return f"{max(0.0, min(100.0, 100.0 * part / whole)):.2f}%" if whole > 0 else "0%"


def _timeline(life: Lifecycle) -> str:
    from rentcheck.gates.table import PHASES

    phases: dict[str, list[str]] = {}
    for gate in life.gates:
        verdict = gate.verdict or "none"
        when = f' title="{_e(gate.time)}{" on " + _e(gate.host) if gate.host else ""}"'
        phases.setdefault(gate.phase, []).append(
            f'<div class="gate v-{_e(verdict) if gate.verdict in _VERDICTS else "none"}"'
            f"{when if gate.time else ''}><span>{_e(gate.name)}</span>"
            f"<b>{_e(gate.verdict or 'not run')}</b></div>"
        )
    order = [*PHASES, *(p for p in phases if p not in PHASES)]
    cells = "".join(
        f'<div class="phase"><h3>{_e(phase)}</h3>{"".join(phases[phase])}</div>'
        for phase in order
        if phase in phases
    )
    return f'<section id="timeline"><h2>Lifecycle</h2><div class="phases">{cells}</div></section>'


_VERDICTS = ("pass", "fail", "forced", "ready")


HISTORY_SHOWN = 20  # the newest gate runs in the table; the rest fold away below it
HISTORY_MAX = 500  # the most rows the page carries at all


def _history_rows(entries: Iterable[Mapping[str, Any]]) -> str:
    rows = []
    for entry in entries:
        verdict = str(entry.get("verdict"))
        failing = ", ".join(str(c) for c in entry.get("failing") or [])
        forced = entry.get("forced")
        reason = forced.get("reason") if isinstance(forced, Mapping) else None
        rows.append(
            f'<tr><td class="mono">{_e(entry.get("time"))}</td><td>{_e(entry.get("gate"))}'
            f'</td><td><span class="gate v-{verdict if verdict in _VERDICTS else "none"}">'
            f"{_e(verdict)}</span></td><td>{_e(entry.get('host') or '')}</td>"
            f'<td class="mono">{_e(failing)}</td><td>{_e(reason or "")}</td></tr>'
        )
    return (
        '<div class="scroll"><table><thead><tr><th>time (UTC)</th><th>gate</th><th>verdict'
        "</th><th>host</th><th>failing</th><th>forced because</th></tr></thead><tbody>"
        f"{''.join(rows)}</tbody></table></div>"
    )


def _history(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return (
            '<section id="history"><h2>Gate runs</h2><p class="empty">The ledger is empty: '
            "no gate has run in this project yet.</p></section>"
        )
    newest = list(reversed(entries[-HISTORY_MAX:]))
    shown, older = newest[:HISTORY_SHOWN], newest[HISTORY_SHOWN:]
    head = f'<section id="history"><h2>Gate runs (newest {len(shown)} of {len(entries)})</h2>'
    if not older:
        return head + _history_rows(shown) + "</section>"
    dropped = len(entries) - len(newest)
    beyond = f" ({dropped} older still, in the ledger)" if dropped else ""
    return (
        head + _history_rows(shown) + f'<p class="meta"><a href="#older-runs">{len(older)} '
        f"older run(s){beyond}</a></p>"
        f'<details id="older-runs"><summary>{len(older)} older run(s)</summary>'
        f"{_history_rows(older)}</details></section>"
    )


def _bar(mount: MountBar) -> str:
    total, free = mount.bytes_total, mount.bytes_free
    if not total or free is None:
        return '<span class="empty">not measured</span>'
    used = total - free
    budget = min(mount.budget_bytes, free) if mount.budget_bytes > 0 else 0
    short = mount.within_budget is False
    parts = [f'<span class="used" style="left:0;width:{_pct(used, total)}"></span>']
    if mount.budget_bytes > 0:
        kind = "budget-short" if short else "budget-ok"
        width = _pct(free if short else budget, total)
        parts.append(f'<span class="{kind}" style="left:{_pct(used, total)};width:{width}"></span>')
    label = f"{_size(used)} used, {_size(free)} free of {_size(total)}"
    return f'<div class="bar" role="img" aria-label="{_e(label)}">{"".join(parts)}</div>'


def _mounts(life: Lifecycle) -> str:
    head = '<section id="mounts"><h2>Disk and inode budget per mount'
    if life.audit_host:
        head += f" (audit of {_e(life.audit_host)})"
    head += "</h2>"
    if not life.mounts:
        return (
            head
            + '<p class="empty">No audit with paths yet: run <code>rentcheck audit '
            + ("--host HOST --path data=DIR --budget SIZE</code>.</p></section>")
        )
    rows = []
    for m in life.mounts:
        verdict = {True: "within budget", False: "below budget", None: "no budget"}[m.within_budget]
        inodes = (
            f"{m.inodes_total - m.inodes_free:,} / {m.inodes_total:,} used"
            if m.inodes_total and m.inodes_free is not None
            else "no inode accounting"
        )
        rows.append(
            f'<tr><td>{_e(m.role)}</td><td class="mono">{_e(m.path)}</td>'
            f'<td class="mono">{_e(m.mount_point)}</td><td>{_bar(m)}</td>'
            f'<td class="num">{_e(_size(m.bytes_free))}</td>'
            f'<td class="num">{_e(_size(m.budget_bytes) if m.budget_bytes else "-")}</td>'
            f'<td>{_e(verdict)}</td><td class="num">{_e(inodes)}</td></tr>'
        )
    legend = (
        '<p class="legend meta"><span class="used"></span>used<span class="budget-ok"></span>'
        'budget (fits)<span class="budget-short"></span>budget (does not fit: the free space '
        "it lacks)</p>"
    )
    return (
        head + '<div class="scroll"><table><thead><tr><th>role</th><th>path</th><th>mount</th>'
        "<th>used / budget / free</th><th>free</th><th>budget</th><th>verdict</th><th>inodes"
        f"</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>{legend}</section>"
    )


def _verify(life: Lifecycle) -> str:
    head = '<section id="verify"><h2>Verified pull'
    if life.verify_root:
        head += f" ({_e(life.verify_root)})"
    head += "</h2>"
    if life.verify_files and life.verify_via != "verify":
        head += f'<p class="meta">verified by <code>rentcheck {_e(life.verify_via)}</code></p>'
    if not life.verify_files:
        return (
            head
            + '<p class="empty">No verify yet: run <code>rentcheck verify DIR</code>.</p></section>'
        )
    rows = []
    total = 0
    for f in life.verify_files:
        size = f.get("size")
        if isinstance(size, int):
            total += size
        codes = ", ".join(
            str(x.get("code")) for x in f.get("findings") or [] if isinstance(x, Mapping)
        )
        verdict = str(f.get("verdict"))
        css = {"ok": "pass", "warning": "forced"}.get(verdict, "fail")
        rows.append(
            f'<tr><td class="mono where">{_e(f.get("path"))}</td>'
            f"<td>{_e(f.get('kind') or '')}</td>"
            f'<td class="num">{_e(_size(size) if isinstance(size, int) else "")}</td>'
            f'<td class="mono sha">{_e(f.get("sha256") or "")}</td>'
            f'<td><span class="gate v-{css}">{_e(verdict)}</span></td>'
            f'<td class="mono">{_e(codes)}</td></tr>'
        )
    return (
        head + f'<p class="meta">{_e(life.verify_count())}, {_e(_size(total))}</p>'
        '<div class="scroll"><table><thead><tr><th>file</th><th>kind</th><th>bytes</th>'
        "<th>SHA-256</th><th>verdict</th><th>findings</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _where(finding: Mapping[str, Any]) -> str:
    where = str(finding.get("path") or finding.get("host") or "")
    if finding.get("line") is not None:
        where += f":{finding.get('line')}"
    return where


def _findings(life: Lifecycle) -> str:
    if not life.rules:
        return (
            '<section id="findings"><h2>Findings by rule</h2><p class="empty">The gates\' last '
            "reports have no findings.</p></section>"
        )
    blocks = []
    for group in life.rules:
        title = f"{_e(group.code)} {_e(group.name or '')}"
        if group.doc_url:
            title = f'<a href="{_e(group.doc_url)}">{title}</a>'
        items = "".join(
            f'<tr><td>{_e(gate)}</td><td class="mono where">{_e(_where(f))}</td>'
            f"<td>{_e(f.get('message'))}</td></tr>"
            for gate, f in group.findings
        )
        sev = group.severity if group.severity in ("error", "warning", "note") else "note"
        blocks.append(
            f'<div class="rule"><h3>{title}<span class="sev sev-{sev}">{_e(group.severity)}'
            f' &times; {len(group.findings)}</span></h3><div class="scroll"><table><thead><tr>'
            f"<th>gate</th><th>where</th><th>message</th></tr></thead><tbody>{items}</tbody>"
            "</table></div></div>"
        )
    return f'<section id="findings"><h2>Findings by rule</h2>{"".join(blocks)}</section>'


def _resume(life: Lifecycle) -> str:
    from rentcheck.report.charts import resume_svg

    head = '<section id="resume"><h2>Resume: kill, checkpoint, relaunch</h2>'
    if not life.resume:
        return (
            head + '<p class="empty">No resume run yet: run <code>rentcheck resume</code>.</p>'
            "</section>"
        )
    figures = "".join(
        f"<figure>{resume_svg(s)}<figcaption>{_e(s.name)}: "
        f"{'passed' if s.passed else 'FAILED' if s.ran else 'not exercised'}</figcaption>"
        "</figure>"
        for s in life.resume
    )
    return head + figures + "</section>"


def _smoke(life: Lifecycle) -> str:
    if len(life.smoke_losses) < 2:
        return ""
    from rentcheck.report.charts import loss_curve_svg

    return (
        '<section id="smoke"><h2>Smoke: loss per step (last run)</h2>'
        f"<figure>{loss_curve_svg(life.smoke_losses, 'smoke')}</figure></section>"
    )


def _watch(life: Lifecycle) -> str:
    if not life.watch_history:
        return ""
    from rentcheck.report.charts import watch_svg

    host = f" on {_e(life.watch_host)}" if life.watch_host else ""
    return (
        f'<section id="watch"><h2>Watch: step and disk over time{host} (this launch)</h2>'
        f"<figure>{watch_svg(life.watch_history)}</figure></section>"
    )


def _durations(life: Lifecycle) -> str:
    if not life.durations:
        return ""
    from rentcheck.report.charts import durations_svg

    return (
        '<section id="durations"><h2>How long each gate took (last run)</h2>'
        f"<figure>{durations_svg(life.durations)}</figure></section>"
    )


def _problems(problems: Iterable[str]) -> str:
    items = "".join(f"<li>{_e(p)}</li>" for p in problems)
    return f'<ul class="problems">{items}</ul>' if items else ""


def render_html(life: Lifecycle) -> str:
    """The whole page as one string (UTF-8, no external reference)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>rentcheck report: {_e(life.project)}</title><style>{_CSS}</style></head>"
        f'<body><main><h1>rentcheck report</h1><p class="meta">{_e(life.project)} &middot; '
        f"generated {_e(life.generated_at)} by rentcheck {_e(life.version)}</p>"
        f"{_problems(life.problems)}{_timeline(life)}{_smoke(life)}{_resume(life)}"
        f"{_watch(life)}{_durations(life)}"
        f"{_mounts(life)}"
        f"{_verify(life)}"
        f"{_findings(life)}{_history(life.entries)}</main></body></html>\n"
    )

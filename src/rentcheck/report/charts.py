"""The report's pictures, as inline SVG: each resume kill scenario as a timeline with the
runs' losses, smoke's loss curve, watch's step and headroom over time, the gates' durations.

A resume picture has one axis of optimizer steps and two rows: the run that was killed (its steps,
then the kill and its signal) and the relaunch (the step it continued from, to its last). The
newest complete checkpoint at the kill is a green line through both rows: a relaunch that
continues right after it lost nothing; one that starts elsewhere, or steps whose losses differ
from the uninterrupted run, are drawn red. Only numbers and escaped text from the report reach
the markup: no script, no link, no external reference.
"""

from __future__ import annotations

import html

from rentcheck.report.lifecycle import ResumeScenario
from rentcheck.sanitise import sanitise

__all__ = ["durations_svg", "loss_curve_svg", "resume_svg", "watch_svg"]

WIDTH, HEIGHT = 720, 150
LEFT, RIGHT = 120, 110  # room on the right for the last label
ROW_KILLED, ROW_RELAUNCH, AXIS = 34, 78, 112
GREY, GREEN, RED, CKPT, INK = "#7a8796", "#5fb884", "#d9443c", "#17803d", "#1d232a"


def _e(value: object) -> str:
    return html.escape(sanitise(str(value)), quote=True)


def _last_step(s: ResumeScenario) -> int:
    steps = [s.killed_after, s.durable, s.relaunch_first, s.relaunch_last, s.reference_last]
    return max([n for n in steps if n is not None] or [1])


def _x(step: float, last: int) -> float:
    return round(LEFT + (WIDTH - LEFT - RIGHT) * step / (last + 1), 1)


def _bar(first: int, last: int, y: int, color: str, top: int) -> str:
    x0, x1 = _x(first - 0.5, top), _x(last + 0.5, top)
    return (
        f'<rect x="{x0}" y="{y - 9}" width="{max(2.0, round(x1 - x0, 1))}" height="18" rx="3" '
        f'fill="{color}"/>'
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", color: str = INK) -> str:
    return (
        f'<text x="{x}" y="{y}" font-size="11" fill="{color}" text-anchor="{anchor}">'
        f"{_e(text)}</text>"
    )


def _axis(top: int) -> str:
    every = max(1, -(-top // 12))  # at most ~12 tick labels
    parts = [
        f'<line x1="{LEFT}" y1="{AXIS}" x2="{WIDTH - RIGHT}" y2="{AXIS}" stroke="{GREY}"/>',
        _text(LEFT - 8, AXIS + 4, "step", anchor="end", color=GREY),
    ]
    for step in range(0, top + 1, every):
        x = _x(step, top)
        parts.append(f'<line x1="{x}" y1="{AXIS}" x2="{x}" y2="{AXIS + 4}" stroke="{GREY}"/>')
        parts.append(_text(x, AXIS + 16, str(step), anchor="middle", color=GREY))
    return "".join(parts)


def _summary(s: ResumeScenario) -> str:
    if not s.ran:
        return f"{s.name}: not exercised"
    said = f"{s.name}: killed after step {s.killed_after}, newest complete checkpoint {s.durable}"
    if s.relaunch_failed:
        return said + "; the relaunch failed"
    said += f"; relaunched at step {s.relaunch_first}"
    if s.compared is not None:
        said += f"; {s.compared} steps compared with the uninterrupted run, " + (
            "all equal"
            if s.first_mismatch is None
            else f"first difference at step {s.first_mismatch}"
        )
    return said


LOSS_TOP, LOSS_BOTTOM = 150, 240  # the loss panel under the step axis
_LINES = (("reference", GREY, "4 3", "uninterrupted"), ("killed", INK, "", "killed"),
          ("relaunch", GREEN, "", "relaunch"))  # fmt: skip


def _loss_panel(s: ResumeScenario, top: int) -> str:
    """The runs' losses on the timeline's step axis: the relaunch on top of the reference."""
    values = [loss for points in s.losses.values() for _, loss in points]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0

    def y(loss: float) -> float:
        return round(LOSS_BOTTOM - (LOSS_BOTTOM - LOSS_TOP) * (loss - low) / span, 1)

    parts = [
        _text(LEFT - 8, LOSS_TOP + 4, f"loss {high:.3g}", anchor="end", color=GREY),
        _text(LEFT - 8, LOSS_BOTTOM + 4, f"{low:.3g}", anchor="end", color=GREY),
        f'<line x1="{LEFT}" y1="{LOSS_BOTTOM}" x2="{WIDTH - RIGHT}" y2="{LOSS_BOTTOM}" '
        f'stroke="{GREY}" stroke-width="0.5"/>',
    ]
    legend_x = WIDTH - RIGHT + 8
    for index, (run, color, dash, label) in enumerate(_LINES):
        points = s.losses.get(run)
        if not points:
            continue
        path = " ".join(f"{_x(step, top)},{y(loss)}" for step, loss in points)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        width = 3 if run == "reference" else 1.6
        parts.append(
            f'<polyline class="loss loss-{run}" points="{path}" fill="none" stroke="{color}" '
            f'stroke-width="{width}"{dashed}/>'
        )
        parts.append(_text(legend_x, LOSS_TOP + 4 + 16 * index, label, color=color))
    return "".join(parts)


def resume_svg(s: ResumeScenario) -> str:
    """One scenario as an ``<svg>`` element (its ``<title>`` says the same in words)."""
    summary = _summary(s)
    height = LOSS_BOTTOM + 14 if s.losses else HEIGHT
    head = (
        f'<svg class="resume" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{_e(summary)}"><title>{_e(summary)}'
        "</title>"
    )
    if not s.ran or s.killed_after is None:
        return head + _text(LEFT, ROW_KILLED, "not exercised", color=GREY) + "</svg>"
    top = _last_step(s)
    parts = [
        _text(LEFT - 8, ROW_KILLED + 4, "killed run", anchor="end"),
        _text(LEFT - 8, ROW_RELAUNCH + 4, "relaunch", anchor="end"),
        _bar(1, s.killed_after, ROW_KILLED, GREY, top),
    ]
    kill = _x(s.killed_after + 0.5, top)
    parts.append(
        f'<path d="M{kill - 6} {ROW_KILLED - 6}l12 12M{kill + 6} {ROW_KILLED - 6}l-12 12" '
        f'stroke="{RED}" stroke-width="3" class="kill"/>'
    )
    said = f"{s.signal or 'kill'} after step {s.killed_after}"
    right = kill > WIDTH * 0.6  # near the right edge: the label runs leftwards
    parts.append(
        _text(
            kill - 10 if right else kill + 10,
            ROW_KILLED - 12,
            said,
            anchor="end" if right else "start",
        )
    )
    if s.durable is not None:
        at = _x(s.durable + 0.5, top)
        parts.append(
            f'<line class="checkpoint" x1="{at}" y1="{ROW_KILLED - 16}" x2="{at}" '
            f'y2="{ROW_RELAUNCH + 14}" stroke="{CKPT}" stroke-width="2" stroke-dasharray="4 3"/>'
        )
        parts.append(
            _text(at - 4, ROW_RELAUNCH + 26, f"checkpoint {s.durable}", anchor="end", color=CKPT)
        )
    if s.relaunch_failed or s.relaunch_first is None:
        parts.append(_text(LEFT + 4, ROW_RELAUNCH + 4, "relaunch FAILED", color=RED))
    else:
        resumed_right = s.durable is None or s.relaunch_first == s.durable + 1
        color = GREEN if resumed_right else RED
        last = s.relaunch_last if s.relaunch_last is not None else s.relaunch_first
        parts.append(
            _bar(s.relaunch_first, last, ROW_RELAUNCH, color, top).replace(
                "<rect ", '<rect class="relaunch" ', 1
            )
        )
        if s.first_mismatch is not None:
            x = _x(s.first_mismatch, top)
            parts.append(
                f'<line x1="{x}" y1="{ROW_RELAUNCH - 12}" x2="{x}" y2="{ROW_RELAUNCH + 12}" '
                f'stroke="{RED}" stroke-width="3"/>'
            )
        verdict = (
            f"{s.compared} steps equal"
            if s.compared is not None and s.first_mismatch is None
            else f"differs at step {s.first_mismatch}"
            if s.first_mismatch is not None
            else ""
        )
        parts.append(_text(_x(last + 0.5, top) + 6, ROW_RELAUNCH + 4, verdict))
    return head + "".join(parts) + _axis(top) + _loss_panel(s, top) + "</svg>"


def durations_svg(durations: list[tuple[str, float]]) -> str:
    """How long each gate's last run took: one bar per gate, on one scale of seconds."""
    longest = max((seconds for _, seconds in durations), default=0.0) or 1.0
    row = 26
    height = 16 + row * len(durations)
    said = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in durations)
    parts = [
        f'<svg class="durations" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{_e(said)}"><title>{_e(said)}</title>'
    ]
    span = WIDTH - LEFT - RIGHT
    for index, (name, seconds) in enumerate(durations):
        y = 8 + row * index
        width = max(2.0, round(span * seconds / longest, 1))
        parts.append(_text(LEFT - 8, y + 14, name, anchor="end"))
        parts.append(
            f'<rect class="duration" x="{LEFT}" y="{y + 2}" width="{width}" height="16" '
            f'rx="3" fill="{GREY}"/>'
        )
        parts.append(_text(LEFT + width + 6, y + 14, f"{seconds:.1f} s"))
    return "".join(parts) + "</svg>"


def loss_curve_svg(points: tuple[tuple[int, float], ...], label: str) -> str:
    """One run's loss per optimizer step as a line, with the step axis under it."""
    top = max(step for step, _ in points)
    low, high = min(loss for _, loss in points), max(loss for _, loss in points)
    span = (high - low) or 1.0
    plot_top, plot_bottom = 14, 96

    def y(loss: float) -> float:
        return round(plot_bottom - (plot_bottom - plot_top) * (loss - low) / span, 1)

    said = f"{label}: {len(points)} steps, loss from {points[0][1]:.4g} to {points[-1][1]:.4g}"
    path = " ".join(f"{_x(step, top)},{y(loss)}" for step, loss in points)
    return (
        f'<svg class="losscurve" viewBox="0 0 {WIDTH} 140" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{_e(said)}"><title>{_e(said)}</title>'
        + _text(LEFT - 8, plot_top + 4, f"loss {high:.3g}", anchor="end", color=GREY)
        + _text(LEFT - 8, plot_bottom + 4, f"{low:.3g}", anchor="end", color=GREY)
        + f'<polyline class="loss" points="{path}" fill="none" stroke="{INK}" stroke-width="1.6"/>'
        + _axis(top)
        + "</svg>"
    )


def watch_svg(history: tuple[tuple[float, int | None, float | None, float | None], ...]) -> str:
    """The launch's watches over time: the step it had reached, and the worst disk and inode
    use (0-100 %), one point per watch."""
    last = max(when for when, *_ in history) or 1.0
    steps = [step for _, step, _, _ in history if step is not None]
    top_step = max(steps, default=0) or 1
    span = WIDTH - LEFT - RIGHT

    def x(when: float) -> float:
        return round(LEFT + span * when / last, 1)

    def line(values: list[tuple[float, float]], top: float, y0: int, y1: int, css: str) -> str:
        if not values:
            return ""
        path = " ".join(f"{x(w)},{round(y1 - (y1 - y0) * v / top, 1)}" for w, v in values)
        dots = "".join(
            f'<circle cx="{x(w)}" cy="{round(y1 - (y1 - y0) * v / top, 1)}" r="2.5"/>'
            for w, v in values
        )
        color = {"step": INK, "disk": GREY, "inodes": GREEN}[css]
        return (
            f'<polyline class="watch-{css}" points="{path}" fill="none" stroke="{color}" '
            f'stroke-width="1.6"/><g fill="{color}">{dots}</g>'
        )

    said = (
        f"{len(history)} watches over {last / 60:.0f} min; last step {steps[-1] if steps else '?'}"
    )
    parts = [
        f'<svg class="watch" viewBox="0 0 {WIDTH} 230" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{_e(said)}"><title>{_e(said)}</title>',
        _text(LEFT - 8, 18, f"step {top_step}", anchor="end"),
        _text(LEFT - 8, 94, "0", anchor="end", color=GREY),
        line([(w, float(s)) for w, s, _, _ in history if s is not None], top_step, 14, 90, "step"),
        _text(LEFT - 8, 124, "used 100%", anchor="end", color=GREY),
        _text(LEFT - 8, 200, "0%", anchor="end", color=GREY),
        line([(w, d) for w, _, d, _ in history if d is not None], 100.0, 120, 196, "disk"),
        line([(w, i) for w, _, _, i in history if i is not None], 100.0, 120, 196, "inodes"),
        _text(WIDTH - RIGHT + 8, 124, "disk", color=GREY),
        _text(WIDTH - RIGHT + 8, 140, "inodes", color=GREEN),
        f'<line x1="{LEFT}" y1="210" x2="{WIDTH - RIGHT}" y2="210" stroke="{GREY}"/>',
        _text(LEFT, 224, "first watch", color=GREY),
        _text(WIDTH - RIGHT, 224, f"+{last / 60:.1f} min", anchor="end", color=GREY),
    ]
    return "".join(parts) + "</svg>"

"""``rentcheck status``: for the current files, each gate's last verdict, what is stale, and
the next command to run; plus a warning for profiles in use whose facts have gone stale."""

from __future__ import annotations

import os
from typing import Any

from rentcheck.config import Config
from rentcheck.gates.evidence import changed_files, project_files, saved_tree
from rentcheck.gates.order import check_order, rerun_command
from rentcheck.gates.table import MAINTENANCE, all_gates
from rentcheck.ledger import read_ledger

__all__ = ["STATUS_SCHEMA", "project_status", "render_status"]

STATUS_SCHEMA = "rentcheck/status/v1"
_DONE = ("pass", "forced", "ready")


def project_status(config: Config, *, host: str | None = None) -> dict[str, Any]:
    """The status document (``rentcheck/status/v1``): one row per gate, in lifecycle order."""
    root = os.path.abspath(config.root)
    ledger = read_ledger(root)
    project = project_files(config)
    evidence: dict[str, Any] = {
        "digest": project.digest,
        "_files": project.files,
        "host": host,
        "manifest": None,
    }
    rows: list[dict[str, Any]] = []
    for gate in all_gates():
        entries = [e for e in ledger.entries if e.get("gate") == gate.name and not e.get("partial")]
        if host is not None and "host" in gate.evidence and "digest" not in gate.evidence:
            entries = [e for e in entries if e.get("host") == host]
        row: dict[str, Any] = {
            "gate": gate.name,
            "phase": gate.phase,
            "state": "never run",
            "verdict": None,
            "time": None,
            "host": None,
            "detail": "",
            "command": rerun_command(gate, host),
        }
        if "digest" in gate.evidence:
            current = [e for e in entries if e.get("digest") == project.digest]
            if current:
                _fill(row, current[-1])
            elif entries:
                _fill(row, entries[-1])
                row["state"] = "stale"
                before = saved_tree(root, str(entries[-1].get("digest", "")))
                changed = changed_files(before, project.files) if before is not None else []
                shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
                row["changed"] = changed[:50]
                row["detail"] = (
                    f"{len(changed)} file(s) changed since {gate.name} "
                    f"{'passed' if entries[-1].get('verdict') in _DONE else 'ran'}: {shown}"
                    if changed
                    else "the files changed since it ran"
                )
        elif entries:
            _fill(row, entries[-1])
        if gate.requires and row["state"] in ("never run", "stale"):
            unmet = [f for f in check_order(config, gate, ledger, evidence) if f.severity > 1]
            if unmet:
                row["state"] = "blocked" if row["state"] == "never run" else row["state"]
                needs = sorted({str(f.details.get("requires")) for f in unmet})
                row["detail"] = row["detail"] or "needs " + ", ".join(needs)
        rows.append(row)
    return {
        "schema": STATUS_SCHEMA,
        "root": root,
        "digest": project.digest,
        "files": len(project.files),
        "host": host,
        "gates": rows,
        "next": _next_command(rows),
        "ledger": ledger.path,
        "ledger_problems": ledger.problems,
        "profiles": _stale_profiles(config, ledger.entries),
    }


def _fill(row: dict[str, Any], entry: dict[str, Any]) -> None:
    verdict = entry.get("verdict")
    row["verdict"] = verdict
    row["state"] = {"pass": "passed", "forced": "forced", "ready": "ready"}.get(
        str(verdict), "failed"
    )
    row["time"] = entry.get("time")
    row["host"] = entry.get("host")
    if verdict == "fail":
        row["detail"] = "failing: " + ", ".join(entry.get("failing") or []) or "failed"
    if verdict == "forced" and isinstance(entry.get("forced"), dict):
        row["detail"] = f"forced: {entry['forced'].get('reason')}"


def _next_command(rows: list[dict[str, Any]]) -> str | None:
    for row in rows:
        if row["phase"] == MAINTENANCE:
            continue
        if row["state"] not in ("passed", "forced", "ready"):
            return str(row["command"])
    return None


def _stale_profiles(config: Config, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Profiles named in the config or the ledger whose stamps are past the staleness limit
    (their money and data facts may have drifted since they were checked)."""
    names = {str(e["profile"]) for e in entries if e.get("profile")}
    for section in ("audit", "teardown"):
        value = config.section(section).get("profile")
        if isinstance(value, str):
            names.add(value)
    if not names:
        return []
    from rentcheck.errors import RentcheckError
    from rentcheck.profiles.document import read_markdown
    from rentcheck.profiles.load import available_profiles
    from rentcheck.profiles.months import effective_today
    from rentcheck.profiles.stale import StaleSettings, stamp_status
    from rentcheck.profiles.stamps import find_stamps

    found: list[dict[str, Any]] = []
    try:
        settings = StaleSettings(today=effective_today(None))
        files = available_profiles(config)
    except RentcheckError:
        return []
    for name in sorted(names):
        entry = files.get(name)
        if entry is None:
            continue
        stamps = find_stamps(read_markdown(entry.path, entry.path))
        stale = [s for s in stamps if stamp_status(s, settings) == "stale"]
        if stale:
            found.append(
                {
                    "profile": name,
                    "stale_facts": len(stale),
                    "oldest": min(str(s.month) for s in stale),
                    "command": f"rentcheck stale {entry.path}",
                }
            )
    return found


def render_status(status: dict[str, Any]) -> str:
    lines = [
        f"rentcheck status of {status['root']} ({status['files']} files, {status['digest'][:19]}…)"
    ]
    width = max(len(r["gate"]) for r in status["gates"])
    for row in status["gates"]:
        when = f" {row['time']}" if row["time"] else ""
        where = f" on {row['host']}" if row["host"] else ""
        detail = f" - {row['detail']}" if row["detail"] else ""
        lines.append(
            f"  {row['phase']:<11} {row['gate']:<{width}}  {row['state']}{when}{where}{detail}"
        )
    for problem in status["ledger_problems"]:
        lines.append(f"warning: {problem}")
    for stale in status["profiles"]:
        lines.append(
            f"warning: profile {stale['profile']} has {stale['stale_facts']} fact(s) past the "
            f"staleness limit (oldest verified {stale['oldest']}): check them with "
            f"`{stale['command']}` before trusting its money and data facts"
        )
    lines.append(f"next: {status['next']}" if status["next"] else "next: every gate has passed")
    from rentcheck.sanitise import sanitise  # host names and paths come from the ledger

    return "\n".join(sanitise(line) for line in lines) + "\n"

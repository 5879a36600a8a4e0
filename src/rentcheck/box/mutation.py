"""RC4xx: live scripts changed under a running process (pure, over the probe's facts).

bash reads its script through an open file (fd 255) by byte offset as it goes. What matters is
whether *that* file - the inode the shell holds - changed after the shell started. A new file
renamed over the path is a different inode: the shell keeps reading its old copy, so a rename
is safe and never flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rentcheck.box.findings import finding
from rentcheck.model import Finding

__all__ = ["TOLERANCE_S", "executors_of", "mutation_findings"]

# Process start times come from clock ticks (10 ms) and /proc/uptime (10 ms): an mtime must be
# this much newer than the start before it counts as "after", so a file written just before
# the launch is never flagged.
TOLERANCE_S = 0.05


def _same_inode(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("dev"), a.get("ino")) == (b.get("dev"), b.get("ino"))


def _shell_evidence(script: Mapping[str, Any]) -> list[str]:
    opened = script.get("open")
    current = script.get("file")
    if not opened or not current or opened.get("deleted"):
        return []  # no open handle seen, or the file it reads was replaced/removed: safe
    held = opened.get("stat") or {}
    if not _same_inode(held, current):
        return []  # replaced by rename: the shell keeps its own copy
    evidence = []
    late = float(held.get("mtime", 0)) - float(script.get("started_at", 0))
    if late > TOLERANCE_S:
        evidence.append(f"modified {late:.1f} s after the process started (same inode)")
    pos = opened.get("pos")
    if pos is not None and pos > int(held.get("size", 0)):
        evidence.append(f"now {held.get('size')} bytes, shorter than the {pos} already read")
    return evidence


def mutation_findings(facts: Mapping[str, Any], host: str) -> list[Finding]:
    found: list[Finding] = []
    scripts: Sequence[Mapping[str, Any]] = facts.get("live_scripts") or []
    for script in scripts:
        pid, command, path = script.get("pid"), script.get("command"), script.get("script")
        details = {"pid": pid, "command": command, "file": path}
        if script.get("kind") == "shell":
            evidence = _shell_evidence(script)
            if evidence:
                found.append(
                    finding(
                        "RC401",
                        f"{path} was changed in place while pid {pid} ({command}) runs it: "
                        f"{'; '.join(evidence)}; the shell will continue at its old byte "
                        "offset in the new text",
                        host,
                        **details,
                    )
                )
        elif script.get("kind") == "python" and script.get("file"):
            late = float(script["file"].get("mtime", 0)) - float(script.get("started_at", 0))
            if late > TOLERANCE_S:
                found.append(
                    finding(
                        "RC402",
                        f"{path} changed {late:.1f} s after pid {pid} ({command}) started; the "
                        "running interpreter executes the old version",
                        host,
                        **details,
                    )
                )
    return found


def executors_of(facts: Mapping[str, Any], path: str) -> list[Mapping[str, Any]]:
    """Live processes whose script is ``path`` (for ``rentcheck push``)."""
    return [s for s in facts.get("live_scripts") or [] if s.get("script") == path]

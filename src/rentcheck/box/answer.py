"""Check the probe's answer before any rule reads it: the box wrote it, so it may lie.

JSON only (no NaN/Infinity, which Python's parser accepts and would make our own JSON report
invalid), the facts schema, and the type of every fact a rule reads. Any fact may be ``null``
(unreadable, with its reason in ``unreadable``); a fact of the wrong type is one clear
RemoteError naming where. A fact that is simply missing is the audit rules' business: RC316.
"""

from __future__ import annotations

import json
from typing import Any

from rentcheck.errors import RemoteError

__all__ = ["SCHEMA", "parse_answer"]

SCHEMA = "rentcheck/box-facts/v1"
NUM = "number"
Shape = Any  # a type, NUM, a dict of field shapes, or ("map"|"list", shape)

SPACE = {"bytes_total": NUM, "bytes_free": NUM, "inodes_total": NUM, "inodes_free": NUM}
MOUNT = {"mount_point": str, "mount_id": NUM, "fstype": str, "source": str}
PLACE = {
    "path": str,
    "realpath": str,
    "exists": bool,
    "is_symlink": bool,
    "measured_at": str,
    "space": SPACE,
    "mount": MOUNT,
}
FACTS: dict[str, Shape] = {
    "schema": str,
    "probe": {"kind": str, "seconds": NUM, "time": NUM},
    "host": {"hostname": str, "home": str, "uid": NUM, "uptime_s": NUM, "python": str},
    "root": PLACE,
    "paths": ("map", PLACE),
    "caches": (
        "list",
        {**PLACE, "name": str, "source": str, "size_bytes": NUM, "files": NUM, "complete": bool},
    ),
    "memory": {"mem_total_bytes": NUM, "limit_bytes": NUM, "usage_bytes": NUM, "oom_kill": NUM},
    "cpu": {"nproc": NUM, "quota_cores": NUM, "cpu_max": str},
    "shm": SPACE,
    "tools": ("map", str),
    "unreadable": ("list", {"fact": str, "why": str}),
    "live_scripts": ("list", {"pid": NUM, "kind": str, "command": str, "script": str}),
    "gpu": {"nvidia_smi": str, "header": str, "xid_lines": ("list", str)},
    "torch": {"python": str, "torch": str, "cuda": str, "error": str, "device_count": NUM},
}


def _problem(value: Any, shape: Shape, where: str) -> str | None:
    """The first place where ``value`` does not fit ``shape`` (None fits everything)."""
    if value is None:
        return None
    if shape == NUM:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{where} is {type(value).__name__}, expected a number"
    if isinstance(shape, type):
        ok = isinstance(value, shape)
        return None if ok else f"{where} is {type(value).__name__}, expected {shape.__name__}"
    if isinstance(shape, tuple):
        kind, inner = shape
        if kind == "map":
            if not isinstance(value, dict):
                return f"{where} is {type(value).__name__}, expected an object"
            items = [(f"{where}.{k}", v) for k, v in value.items()]
        else:
            if not isinstance(value, list):
                return f"{where} is {type(value).__name__}, expected a list"
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        return next((p for w, v in items if (p := _problem(v, inner, w))), None)
    if not isinstance(value, dict):
        return f"{where} is {type(value).__name__}, expected an object"
    fields = ((f"{where}.{k}", value.get(k), s) for k, s in shape.items())
    return next((p for w, v, s in fields if (p := _problem(v, s, w))), None)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_answer(stdout: bytes, host: str) -> dict[str, Any]:
    """The facts dict in the probe's stdout; RemoteError when it is not a valid answer."""
    try:
        facts = json.loads(stdout, parse_constant=_no_constants)
    except ValueError as exc:
        if "is not a JSON number" in str(exc):
            raise RemoteError(
                f"the probe's answer from {host} holds {exc}: NaN and Infinity are rejected",
                hint="a tool on the box printed a non-finite number; run the probe by hand "
                "(rentcheck audit --debug) to see which",
            ) from None
        head = stdout[:200].decode("utf-8", "replace")
        raise RemoteError(
            f"the probe on {host} printed no JSON: {head!r}",
            hint="a login script that prints text (motd, echo in ~/.bashrc) can cause this",
        ) from None
    if not isinstance(facts, dict) or facts.get("schema") != SCHEMA:
        got = facts.get("schema") if isinstance(facts, dict) else type(facts).__name__
        raise RemoteError(
            f"the answer from {host} is not a rentcheck probe answer (schema {got!r}, "
            f"expected {SCHEMA})",
            hint="something on the box replaced python3 or the probe; check `which python3`",
        )
    problem = _problem(facts, FACTS, "facts")
    if problem:
        raise RemoteError(
            f"the probe's answer from {host} is malformed: {problem}",
            hint="the box's python3 or a tool it runs is not what it claims; run "
            "`rentcheck audit --debug` and report it with the box's OS",
        )
    checked: dict[str, Any] = facts
    return checked

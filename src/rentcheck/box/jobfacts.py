"""Gather one launched job's facts in one exec: the job probe on stdin, JSON back."""

from __future__ import annotations

import functools
import json
import os
import shlex
from typing import TYPE_CHECKING, Any

from rentcheck.box.answer import _no_constants
from rentcheck.errors import RemoteError

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = ["gather_job", "job_stream"]

JOB_SCHEMA = "rentcheck/job-facts/v1"
_MAIN = '\nif __name__ == "__main__":\n'


@functools.lru_cache(maxsize=1)
def job_stream() -> bytes:
    """probe.py without its ``__main__`` block, then jobprobe.py: one stdlib program."""
    from rentcheck.payload import PAYLOAD_DIR

    with open(os.path.join(PAYLOAD_DIR, "probe.py"), encoding="utf-8") as handle:
        probe = handle.read()
    with open(os.path.join(PAYLOAD_DIR, "jobprobe.py"), encoding="utf-8") as handle:
        job = handle.read()
    if probe.count(_MAIN) != 1:  # pragma: no cover - guards against a future edit of probe.py
        raise AssertionError('probe.py must end with one `if __name__ == "__main__":` block')
    return (probe.split(_MAIN)[0] + "\n\n" + job).encode()


def gather_job(box: Box, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run the job probe on ``box`` under a server-side ``timeout``; RemoteError if it broke."""
    request = dict(request, budget_s=max(1.0, timeout * 0.8))
    payload = shlex.quote(json.dumps(request, separators=(",", ":"), sort_keys=True))
    script = (
        f"if [ -x /usr/bin/python3 ]; then exec /usr/bin/python3 -I -B - {payload}; fi; "
        f"exec python3 -I -B - {payload}"
    )
    result = box.run(script, stdin=job_stream(), timeout=timeout, label="the job probe")
    if not result.ok:
        raise RemoteError(
            f"the job probe failed on {box.name} (exit {result.exit_status}): "
            f"{result.stderr_tail()}",
            hint="the box needs python3 for launch-check and watch",
        )
    facts = parse_job_answer(result.stdout, box.name)
    facts["round_trip_s"] = result.seconds
    return facts


_SHAPE = {
    "status": dict,
    "process": dict,
    "log": dict,
    "checkpoint": dict,
    "disk": dict,
    "memory": dict,
    "gpu": dict,
    "unreadable": list,
    "jobs": dict,  # teardown mode: key -> the process fact
    "paths": dict,  # teardown mode: path -> real path and whether it exists
    "box_jobs": dict,  # teardown mode: session -> status and process of every job there
    "writers": list,  # teardown mode: processes with a file under the root open to write
}


def parse_job_answer(stdout: bytes, host: str) -> dict[str, Any]:
    """The job probe's JSON; RemoteError for anything else (the box's output is untrusted)."""
    try:
        facts = json.loads(stdout, parse_constant=_no_constants)
    except ValueError:
        head = stdout[:200].decode("utf-8", "replace")
        raise RemoteError(
            f"the job probe on {host} printed no JSON: {head!r}",
            hint="a login script that prints text (motd, echo in ~/.bashrc) can cause this",
        ) from None
    if not isinstance(facts, dict) or facts.get("schema") != JOB_SCHEMA:
        raise RemoteError(
            f"the answer from {host} is not a rentcheck job probe answer",
            hint="something on the box replaced python3 or the probe; check `which python3`",
        )
    for key, kind in _SHAPE.items():
        if facts.get(key) is not None and not isinstance(facts[key], kind):
            raise RemoteError(f"the job probe's answer from {host} is malformed: {key}")
    if not isinstance(facts.get("now"), (int, float)):
        raise RemoteError(f"the job probe's answer from {host} is malformed: now")
    return facts

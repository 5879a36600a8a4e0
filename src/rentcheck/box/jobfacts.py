"""Gather one launched job's facts in one exec: the job probe on stdin, JSON back."""

from __future__ import annotations

import functools
import json
import os
import shlex
from typing import TYPE_CHECKING, Any

from rentcheck.box.answer import parse_answer
from rentcheck.errors import RemoteError

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = ["gather_job", "job_stream"]

_MAIN = '\nif __name__ == "__main__":\n'


@functools.lru_cache(maxsize=1)
def job_stream() -> bytes:
    """probe.py without its ``__main__`` block, then jobprobe.py: one stdlib program."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "probe.py"), encoding="utf-8") as handle:
        probe = handle.read()
    with open(os.path.join(here, "jobprobe.py"), encoding="utf-8") as handle:
        job = handle.read()
    if probe.count(_MAIN) != 1:  # pragma: no cover - guards against a future edit of probe.py
        raise AssertionError("probe.py must end with one `if __name__ == \"__main__\":` block")
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
    facts = parse_answer(result.stdout, box.name)
    facts["round_trip_s"] = result.seconds
    return facts

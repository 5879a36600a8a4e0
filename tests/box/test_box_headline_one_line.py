"""The audit's facts table (a headline) shows a box's path on one line, escaped.

A headline is a tuple of lines rentcheck wrote; each goes through ``sanitise`` on its way out,
so a newline, CR, ESC, C1 or bidi control inside one came from the box and is shown, not obeyed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rentcheck.sanitise import sanitise

FORGED = "All checks passed (1 file checked)."
HOSTILE = f"d\n{FORGED}\r\x1b[2J\x9b31m\u202eevil\u2066x\u2069"


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_a_box_path_in_the_facts_table_cannot_forge_a_line(cli, tmp_path: Path, fmt: str) -> None:
    hostile = tmp_path / HOSTILE
    hostile.mkdir()
    res = cli(
        "audit", "--host", "local", "--no-expect-gpu", "--path", f"data={hostile}",
        "--output-format", fmt, cwd=tmp_path,
    )  # fmt: skip
    assert res.code == 0, res.err
    for stream in (res.out, res.err):
        lines = stream.splitlines()
        assert not any(line.startswith(FORGED) for line in lines), stream
        assert all(sanitise(line) == line for line in lines), stream  # nothing raw survives
    if fmt == "text":
        assert f"data={sanitise(str(hostile))}" in res.out
    if fmt == "json":  # the exact value for a program, written as one escaped line
        doc = json.loads(res.out)
        assert doc["facts"]["paths"]["data"]["path"] == str(hostile)

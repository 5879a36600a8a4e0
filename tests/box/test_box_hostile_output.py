"""Text a box controls never acts on a terminal or a CI log, in any output format.

A lying box answers the probe with paths, mount points, cache names and reasons full of ANSI/OSC
sequences, newlines and forged summary lines. Human formats (SARIF's messages too) show them
escaped; JSON keeps them exactly, written as escapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from liar import CannedBox

from rentcheck.box.runner import run_audit
from rentcheck.box.settings import audit_settings
from rentcheck.config import load_config
from rentcheck.registry import all_rules
from rentcheck.report import FORMATS, Report, render
from rentcheck.sanitise import sanitise

NASTY = [
    "\n",
    "\r",
    "\x1b[2J",
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\",
    "\x9b31m",
    "\x00",
    "\x7f",
    "\u202e",
    "\u2028",
    "\udc80",
    "\nAll checks passed.\n",
    "\n::error file=x::forged",
    "%0A",
]
hostile = st.lists(
    st.one_of(st.sampled_from(NASTY), st.text(min_size=1, max_size=6)), min_size=1, max_size=5
).map("".join)


def _facts(s: list[str]) -> dict[str, Any]:
    space = {"bytes_total": 100, "bytes_free": 1, "inodes_total": 10, "inodes_free": 0}
    return {
        "schema": "rentcheck/box-facts/v1",
        "probe": {"kind": "python"},
        "root": {"mount": {"mount_id": 1}, "space": {"bytes_total": 10}},
        "paths": {
            "data": {
                "path": s[0],
                "exists": False,
                "measured_at": s[1],
                "space": space,
                "mount": {"mount_point": s[2], "mount_id": 1},
            }
        },
        "caches": [
            {
                "name": s[3],
                "path": s[4],
                "is_symlink": True,
                "realpath": s[5],
                "size_bytes": 5,
                "space": space,
                "mount": {"mount_point": s[2], "mount_id": 1},
            }
        ],
        "tools": {},
        "unreadable": [{"fact": s[6], "why": s[7]}],
    }


def _report(tmp_path: Path, facts: dict[str, Any]) -> Report:
    config = load_config(str(tmp_path), isolated=True)
    settings_ = audit_settings(config, paths=["data=/data"], budget="1G")
    settings_ = settings_.__class__(**{**vars(settings_), "expect_gpu": False})
    rules = all_rules()
    box = CannedBox(json.dumps(facts).encode())
    result = run_audit("liar", config, settings_, rules, box=box)
    return Report(
        command="audit",
        findings=result.findings,
        rules=rules,
        config_digest=config.digest(),
        extra={"host": "liar", "facts": result.facts},
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(strings=st.lists(hostile, min_size=8, max_size=8))
def test_hostile_probe_text_reaches_human_formats_only_escaped(
    tmp_path: Path, strings: list[str]
) -> None:
    report = _report(tmp_path, _facts(strings))
    codes = {f.code for f in report.findings}
    assert {"RC301", "RC302", "RC303", "RC314", "RC315", "RC316"} <= codes
    summary = report.summary_text()
    for fmt in FORMATS:
        out = render(report, fmt, color=False)
        if fmt in ("json", "sarif"):
            doc = json.loads(out)
            texts = (
                [r["message"] for r in doc["results"]]
                if fmt == "json"
                else [r["message"]["text"] for r in doc["runs"][0]["results"]]
            )
            if fmt == "json":
                assert texts == [f.message for f in report.findings]  # exact, not escaped
            else:  # code scanning shows the message to a person: escaped, one line (issue 30)
                assert texts == [sanitise(f.message) for f in report.findings]
            for line in out.split("\n"):  # JSON escapes every control: one line each
                assert sanitise(line) == line
            continue
        lines = out.split("\n")
        assert lines[-1] == "" and lines[-2] == summary
        for line in lines:
            assert sanitise(line) == line, (fmt, line)  # no control character survives
        # No forged summary or annotation: the only summary line is rentcheck's own, last.
        assert sum(1 for x in lines if x.startswith(("All checks", "Found "))) == 1
        if fmt == "concise":
            assert len(lines) == len(report.findings) + 2
            for finding, line in zip(report.findings, lines, strict=False):
                assert line.endswith(sanitise(finding.message))
        if fmt == "github":
            assert all(x.startswith("::") for x in lines[:-2])
            assert len(lines) == len(report.findings) + 2


def test_sanitise_shows_every_control_character_escaped() -> None:
    assert sanitise("a\nb\r\tc") == "a\\nb\\r\\tc"
    assert sanitise("\x1b]0;t\x07") == "\\x1b]0;t\\x07"
    assert sanitise("\x9b\x7f\u202e\u2028\udc80") == "\\x9b\\x7f\\u202e\\u2028\\udc80"
    assert sanitise("gpu: NVIDIA H100 80GB HBM3 — 日本") == "gpu: NVIDIA H100 80GB HBM3 — 日本"


def test_a_co_tenants_script_name_reaches_roots_audit_escaped(
    cli, lab, tmp_path: Path, running_script
) -> None:
    """RC401 end to end over a real sshd: the command line of a process on the box, forged."""
    (tmp_path / "rentcheck.yaml").write_text(f"audit:\n  script_roots: [{tmp_path}]\n")
    script = tmp_path / "job\x1b]0;owned\x07\nAll checks passed.\n.sh"
    script.write_text("#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.05; done\n")
    running_script(script)
    with open(script, "a") as handle:  # edited in place while it runs: RC401 names it
        handle.write("echo later\n")
    result = cli(
        "audit", "--host", "box", "--ssh-config", str(lab.ssh_config), "--no-expect-gpu",
        "--select", "RC4", "--output-format", "concise", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1, result.err
    assert "\x1b" not in result.out and "\x07" not in result.out
    assert "job\\x1b]0;owned\\x07\\nAll checks passed.\\n.sh" in result.out
    lines = result.out.splitlines()
    assert not any(line.startswith("All checks passed") for line in lines)
    (tmp_path / "go").touch()

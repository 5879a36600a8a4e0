"""watch keeps this launch's step and disk/inode use per watch, and the report draws them
(issue 30: the page had no watch history)."""

from __future__ import annotations

import json
import re
from importlib import resources

import jsonschema
from test_launch import Jobs, local_jobs  # noqa: F401 - the fixture, used by name

from tests.report.chromium import chromium_binary, load_page


def test_three_watches_make_a_history_and_a_picture(local_jobs: Jobs, tmp_path) -> None:  # noqa: F811
    session = local_jobs.new_session()
    assert local_jobs.job("local", session, steps=400, pause=0.02).code in (0, 1)
    for _ in range(3):
        assert local_jobs.watch("local", session, "-q").code == 0
    kept = local_jobs.project / ".rentcheck" / "last" / "watch.json"
    doc = json.loads(kept.read_text())
    schema = json.loads(
        resources.files("rentcheck").joinpath("resources/report.schema.json").read_text()
    )
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    history = doc["watch_history"]
    assert len(history) == 3
    steps = [row["step"] for row in history]
    assert all(isinstance(s, int) for s in steps) and steps == sorted(steps)
    assert all(0 <= row["disk_used_pct"] <= 100 for row in history)
    page = tmp_path / "report.html"
    assert local_jobs.cli("report", "--html", str(page), cwd=local_jobs.project).code == 0
    text = page.read_text()
    assert "Watch: step and disk over time on local (this launch)" in text
    [points] = re.findall(r'<polyline class="watch-step" points="([^"]*)"', text)
    assert len(points.split()) == 3
    binary = chromium_binary()
    if binary is not None:
        load = load_page(
            binary,
            page.as_uri(),
            str(tmp_path / "watch.png"),
            ("document.querySelectorAll('#watch svg circle').length",),
        )
        drawn = sum(
            row[k] is not None
            for row in history
            for k in ("step", "disk_used_pct", "inodes_used_pct")
        )
        assert load.errors == [] and load.values == [drawn]  # a dot per number per watch

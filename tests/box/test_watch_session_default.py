"""``rentcheck watch --host H`` without ``--session`` watches the last launch on H (issue 30).

It used to look for session ``train`` whatever the ledger said: "DEAD: no job train" right
after the demo's own launch under another name.
"""

from __future__ import annotations

import json

from test_launch import Jobs, local_jobs  # noqa: F401 - the fixture, used by name


def test_watch_takes_the_session_of_the_last_launch_and_says_so(local_jobs: Jobs) -> None:  # noqa: F811
    first, last = local_jobs.new_session(), local_jobs.new_session()
    assert local_jobs.job("local", first).code in (0, 1)
    assert local_jobs.job("local", last).code in (0, 1)
    res = local_jobs.cli(
        "watch", "--host", "local", "--output-format", "json", cwd=local_jobs.project
    )
    assert res.code == 0, res.out + res.err
    assert f"watching session '{last}': the last launch on local (ledger, " in res.err
    event = json.loads(res.out)["watch"]
    assert event["session"] == last and event["health"] == "OK", event
    named = local_jobs.watch("local", first)  # --session still wins, and no note
    assert named.code == 0 and "watching session" not in named.err

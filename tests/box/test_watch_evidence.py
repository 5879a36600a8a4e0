"""What a watch records in the ledger about where the job saves (issue 28): the box's own
words, kept as text for teardown to ask the box about again, never more than a path can be."""

from __future__ import annotations

from rentcheck.box.watch_gate import PATH_MAX, watch_evidence


def test_a_watch_records_the_checkpoint_dir_and_newest_checkpoint_the_box_named() -> None:
    facts = {
        "status": {"session": "train-1", "pid": 7},
        "checkpoint": {"dir": "/data/ckpt", "newest": {"path": "/data/ckpt/step_9.pt"}},
    }
    assert watch_evidence(facts) == {
        "session": "train-1",
        "checkpoint_dir": "/data/ckpt",
        "newest_checkpoint": "/data/ckpt/step_9.pt",
    }
    assert watch_evidence({"status": {"session": "s"}, "checkpoint": None}) == {"session": "s"}


def test_what_no_path_can_be_is_not_recorded() -> None:
    long, nul = "/d/" + "x" * PATH_MAX, "/data/ck\0pt"
    for bad in (long, nul, 42, ["/a"], ""):
        facts = {"status": "not a dict", "checkpoint": {"dir": bad, "newest": {"path": bad}}}
        assert watch_evidence(facts) == {}

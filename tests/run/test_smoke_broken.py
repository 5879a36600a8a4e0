"""Every broken smoke variant of tinytrain fails with its own class, location and hint."""

from __future__ import annotations

from pathlib import Path

import pytest
from tinykit import make_variant, project_config, variant, variant_names

from rentcheck.registry import all_rules
from rentcheck.run.settings import smoke_settings
from rentcheck.run.smoke import run_smoke

# Where the traceback's innermost project frame must point (None: no traceback expected).
LOCATION = {
    "import_error": "train.py",
    "config_key_missing": None,
    "shape_bug": "model.py",
    "hard_coded_cuda": "train.py",
    "nan_from_step_1": None,
    "hang": None,
    "data_error": "data.py",
    "needs_gpu": "train.py",
    "save_broken": "checkpoint.py",
}


def test_every_smoke_variant_has_an_expected_location() -> None:
    assert sorted(LOCATION) == variant_names("smoke")


@pytest.mark.parametrize("name", variant_names("smoke"))
def test_broken_variant_fails_with_its_class(name: str, tmp_path: Path) -> None:
    spec = variant(name)
    root = make_variant(name, tmp_path / name)
    # A hang waits for the timeout; nothing else comes close to it.
    overrides = {"timeout": 5} if name == "hang" else {}
    outcome = run_smoke(
        smoke_settings(project_config(root), overrides), workdir_parent=str(tmp_path)
    )
    assert not outcome.passed, outcome.verdict_lines()
    rule = all_rules()[spec["code"]]
    first = outcome.findings[0]
    assert first.code == spec["code"], outcome.verdict_lines()
    assert first.details["class"] == spec["class"]
    assert first.path == LOCATION[name]
    # The report carries what a person needs: the exact reproduction and the log tail.
    assert "reproduce" in first.details and first.details["log_tail"] is not None
    assert outcome.workdir is not None and Path(outcome.workdir).is_dir()
    text = "\n".join(outcome.verdict_lines())
    assert f"reproduce: cd {root} && env " in text and "CUDA_VISIBLE_DEVICES=''" in text
    assert (Path(outcome.workdir) / "smoke.log").read_text().splitlines() == outcome.result.lines
    assert rule.fix  # the help line the report prints
    if name == "hard_coded_cuda":
        assert (
            first.message == "hard-coded CUDA: AssertionError: Torch not compiled with CUDA enabled"
        )
    if name == "nan_from_step_1":
        assert outcome.ended_by == "stopped by rentcheck at non-finite parameters after step 1"
    if name == "hang":
        assert outcome.result.timed_out and "killed by rentcheck" in outcome.ended_by


def test_a_waived_class_passes_with_a_note(tmp_path: Path) -> None:
    root = make_variant("needs_gpu", tmp_path / "needs_gpu")
    settings = smoke_settings(project_config(root), {"allow": ["needs-gpu"]})
    outcome = run_smoke(settings, workdir_parent=str(tmp_path))
    assert outcome.passed
    assert [(f.code, f.severity.label) for f in outcome.findings] == [("RC606", "note")]
    assert "[allowed: needs-gpu]" in outcome.findings[0].message

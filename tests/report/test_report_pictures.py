"""The report as the ledger's picture (issue 30): one source per section (pull's verify shows
as verify), the resume scenarios drawn as timelines, the gate-runs table capped, and the page
checked in headless Chromium at desktop and phone width (screenshots kept)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rentcheck.report.lifecycle import gather
from tests.conftest import git
from tests.report.chromium import DESKTOP, PHONE, chromium_binary, load_page
from tests.run.tinykit import fake_project

RESUME_ARGS = "--steps, '{steps}', --ckpt-every, '{checkpoint_every}', --sleep, '0.15'"


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory, cli_module) -> Path:
    """A project that ran resume (two kill scenarios, for real), a pull from `local` (which
    verifies) and lint 25 times."""
    tmp = tmp_path_factory.mktemp("lived")
    root = fake_project(tmp / "proj", resume_args=RESUME_ARGS)
    git(root, "init", "-q", "-b", "main")
    res = cli_module("resume", "--no-kill-during-save", cwd=root)
    assert res.code == 0, res.out + res.err
    assert cli_module("smoke", cwd=root).code == 0
    box = tmp / "box"
    (box / "ckpt").mkdir(parents=True)
    (box / "ckpt" / "step-8.bin").write_bytes(b"w" * 500)
    (box / "train.log").write_text("step 8 loss 0.1\n")
    assert cli_module("manifest", "build", "--host", "local", str(box), cwd=root).code == 0
    pulled = cli_module("pull", f"local:{box}", "run", cwd=root)
    assert pulled.code == 0, pulled.out + pulled.err
    for _ in range(25):
        cli_module("check", cwd=root)
    return root


@pytest.fixture(scope="module")
def cli_module():  # type: ignore[no-untyped-def]
    """``rentcheck ARGS`` in-process, for a module-scoped fixture (capsys is per test)."""
    import contextlib
    import io

    from rentcheck.cli import main
    from tests.conftest import CliResult

    def run(*args: str, cwd: Path) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        before = os.getcwd()
        os.chdir(cwd)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        finally:
            os.chdir(before)
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


def test_pulls_verify_is_the_verify_section_and_the_lifecycle_card(lived: Path) -> None:
    life = gather(str(lived))
    [verify] = [g for g in life.gates if g.name == "verify"]
    assert verify.verdict == "pass"  # the card, from the ledger
    assert life.verify_via == "pull" and len(life.verify_files) == 2  # the table, same run
    assert life.verify_root is not None and life.verify_root.endswith("run")


def test_resume_scenarios_are_read_for_the_picture(lived: Path) -> None:
    life = gather(str(lived))
    assert [s.name for s in life.resume] == [
        "SIGKILL between checkpoints",
        "SIGTERM between checkpoints",
    ]
    for s in life.resume:
        assert s.passed and s.signal in s.name
        assert s.durable is not None and s.relaunch_first == s.durable + 1
        # the losses of both runs: the relaunch's first step is the one after the checkpoint,
        # and its losses are the uninterrupted run's from there (the scenario passed)
        reference = dict(s.losses["reference"])
        assert s.losses["killed"][-1][0] == s.killed_after
        assert s.losses["relaunch"][0][0] == s.relaunch_first
        assert all(reference[step] == loss for step, loss in s.losses["relaunch"])


def test_the_markdown_shows_the_same_resume_and_verify(lived: Path) -> None:
    from rentcheck.report.markdown import render_markdown

    text = render_markdown(gather(str(lived)))
    assert "## Resume: kill, checkpoint, relaunch" in text
    assert "| ✅ SIGKILL between checkpoints |" in text
    assert "## Verified pull (2 file(s), verified by `rentcheck pull`)" in text


def _shots_dir(tmp_path: Path) -> Path:
    """Where the screenshots go: REPORT_SCREENSHOTS_DIR when set (kept), else the test's dir
    (the suite's conftest clears RENTCHECK_* variables)."""
    kept = os.environ.get("REPORT_SCREENSHOTS_DIR")
    folder = Path(kept) if kept else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


CHECKS = (
    "document.querySelectorAll('#resume svg').length",
    "document.querySelectorAll('#resume svg .kill').length",
    "document.querySelectorAll('#resume svg .checkpoint').length",
    "document.querySelectorAll('#resume svg .relaunch').length",
    "Array.from(document.querySelectorAll('#resume svg'))"
    ".map(s => s.getBoundingClientRect().width)",
    "document.querySelectorAll('#verify tbody tr').length",
    "document.querySelectorAll('#history > .scroll tbody tr').length",
    "document.querySelectorAll('#older-runs tbody tr').length",
    "document.documentElement.scrollWidth - window.innerWidth",
    "document.body.innerText.includes('No verify yet')",
    "Array.from(document.querySelectorAll('#durations text')).map(t => t.textContent)",
    "Array.from(document.querySelectorAll('#resume svg .loss')).map(l => l.classList[1])",
    "document.querySelectorAll('#smoke svg polyline.loss').length",
)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_page_in_chromium_at_desktop_and_phone_width(
    lived: Path, cli_module, tmp_path: Path, viewport: tuple[int, int, bool]
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium (`apt-get install -y chromium`; .ci/run installs it)")
    page = tmp_path / "report.html"
    assert cli_module("report", "--html", str(page), cwd=lived).code == 0
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and not re.search(r"<[a-z]+[^>]*\ssrc=", text)
    name = "desktop" if viewport == DESKTOP else "phone"
    shot = _shots_dir(tmp_path) / f"report-{name}.png"
    load = load_page(binary, page.as_uri(), str(shot), CHECKS, viewport=viewport)
    print(f"screenshot ({name}): {shot}")
    assert load.errors == []
    (svgs, kills, checkpoints, relaunches, widths, verified, shown, older, overflow, none, bars,
     losses, smoke_curve) = load.values  # fmt: skip
    assert smoke_curve == 1
    # each scenario's losses: the uninterrupted run, the killed one and its relaunch
    assert sorted(losses) == sorted(["loss-reference", "loss-killed", "loss-relaunch"] * 2)
    assert {"smoke", "resume", "pull", "verify"} <= set(bars)  # one bar each, labelled
    assert svgs == kills == checkpoints == relaunches == 2  # one picture per scenario
    assert all(w > 300 for w in widths)  # drawn, at the width there is
    assert verified == 2 and none is False  # pull's verify, not "No verify yet"
    assert shown == 20 and older >= 7  # 25 lints, smoke, resume, pull, verify: capped, folded
    assert overflow <= 0  # nothing wider than the screen: wide tables scroll in place
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_kept_reports_validate_against_typed_gate_payloads(lived: Path) -> None:
    """resume's scenarios, pull's transfer and verify's table are typed in the schema (issue
    30: gate payloads were bare objects, so a retyped field passed validation)."""
    import json
    from importlib import resources

    import jsonschema

    text = resources.files("rentcheck").joinpath("resources/report.schema.json").read_text()
    schema = json.loads(text)
    validator = jsonschema.Draft202012Validator(schema)
    last = lived / ".rentcheck" / "last"
    docs = {p.stem: json.loads(p.read_text()) for p in last.glob("*.json")}
    assert {"smoke", "resume", "pull", "lint"} <= set(docs)
    for doc in docs.values():
        validator.validate(doc)
    broken = json.loads(json.dumps(docs["resume"]))
    broken["resume"]["scenarios"][0]["killed_after_step"] = "six"
    assert not validator.is_valid(broken)
    broken = json.loads(json.dumps(docs["pull"]))
    broken["gate"]["extras"]["verify"]["files"] = [{"path": 3}]
    assert not validator.is_valid(broken)

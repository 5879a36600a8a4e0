"""``rentcheck smoke`` through the CLI on a stdlib-only trainer: formats, exit codes, errors."""

from __future__ import annotations

import json
from pathlib import Path

from tinykit import fake_project


def test_pass_with_the_shim_loaded_but_no_torch(cli, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", smoke_args="--steps, '{steps}'")
    result = cli("smoke", cwd=root)
    assert result.code == 0, result.out
    assert result.out.startswith("smoke: PASSED: the run exited on its own (exit 0) after 2 ")
    # The shim loaded but saw no torch: the verdict rests on the exit code and the log.
    assert "shim: no-torch" in result.out and "RC614" in result.out


def test_nan_in_the_log_fails_with_help_and_reproduce(cli, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", smoke_args="--steps, '3', --nan-at, '2'")
    result = cli("smoke", "--keep-workdir", cwd=root)
    assert result.code == 1
    assert "class: non-finite: step=2 loss=nan" in result.out
    assert "<project>: RC607 NaN/Inf: step=2 loss=nan" in result.out
    assert "help: Find the first non-finite value" in result.out
    # The reproduce line runs the command as typed, from where rentcheck was run.
    assert f"reproduce: cd {root} && env " in result.out
    assert " fake_train.py --steps 3" in result.out
    assert "| step=1 loss=" in result.out
    kept = result.out.split("outputs and smoke.log kept in ", 1)[1].split("\n", 1)[0]
    assert "step=2 loss=nan" in (Path(kept) / "smoke.log").read_text()


def test_a_crash_points_at_the_users_line(cli, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", smoke_args="--crash-at, '2'")
    result = cli("smoke", "--output-format", "concise", cwd=root)
    assert result.code == 1
    source = (root / "fake_train.py").read_text().splitlines()
    line = next(i for i, t in enumerate(source, 1) if "raise RuntimeError(" in t)
    assert (
        f"fake_train.py:{line}:1: RC612 crashed: RuntimeError: fake trainer crashed" in result.out
    )


def test_isolated_python_still_gets_a_verdict(cli, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p")
    ok = cli(
        "smoke", "--output-format", "json", "--", "{python}", "-I", "{root}/fake_train.py", cwd=root
    )
    doc = json.loads(ok.out)
    assert ok.code == 0 and doc["smoke"]["shim"]["status"] == "unavailable"
    assert doc["summary"]["by_code"] == {"RC614": 1}
    bad = cli("smoke", "--", "{python}", "-S", "{root}/fake_train.py", "--nan-at", "1", cwd=root)
    assert bad.code == 1 and "RC607" in bad.out and "shim: unavailable" in bad.out


def test_shim_on_makes_an_unavailable_shim_fail(cli, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p")
    result = cli("smoke", "--shim", "on", "--output-format", "concise", "--", "{python}", "-I",
                 "{root}/fake_train.py", cwd=root)  # fmt: skip
    assert result.code == 1 and "RC614 step shim unavailable" in result.out


def test_writing_into_the_project_is_reported(cli, tmp_path: Path) -> None:
    # The run works in a copy; a script that writes to an absolute project path still hits it.
    root = fake_project(tmp_path / "p", smoke_args=f"--write-into, '{tmp_path / 'p'}'")
    result = cli("smoke", "--output-format", "json", "-o", "out.json", cwd=root)
    assert result.code == 1 and result.out == ""
    doc = json.loads((root / "out.json").read_text())
    assert [r["code"] for r in doc["results"]] == ["RC610", "RC614"]  # no torch: note
    assert doc["results"][0]["details"]["files"] == ["stray-output.txt"]


def test_missing_command_and_unknown_executable_are_one_line_errors(cli, tmp_path: Path) -> None:
    (tmp_path / "rentcheck.yaml").write_text("smoke: {}\n")
    missing = cli("smoke", cwd=tmp_path)
    assert missing.code == 2 and "smoke.command" in missing.err and missing.err.count("\n") == 1
    for gate in ("smoke", "resume"):
        unknown = cli(gate, "--", "no-such-trainer-binary", cwd=tmp_path)
        assert unknown.code == 2 and "cannot start 'no-such-trainer-binary'" in unknown.err


def test_list_presets(cli, tmp_path: Path) -> None:
    result = cli("smoke", "--list-presets", cwd=tmp_path)
    assert result.code == 0
    for name in ("plain", "lightning-cli", "lightning-hydra", "hf-trainer", "torchtitan",
                 "torchtune", "composer"):  # fmt: skip
        assert f"\n{name}: " in "\n" + result.out
    assert "--logging_nan_inf_filter false" in result.out


def test_the_help_epilogs_example_runs_as_typed(cli, tmp_path: Path) -> None:
    """`rentcheck smoke -- python train.py --steps 2`: relative script, the active python."""
    root = fake_project(tmp_path / "p")
    result = cli("smoke", "--output-format", "json", "--", "python", "fake_train.py",
                 "--steps", "2", cwd=root)  # fmt: skip
    assert result.code == 0, result.out
    doc = json.loads(result.out)
    assert doc["smoke"]["optimizer_steps"] == 2 and doc["smoke"]["exit_status"] == 0
    assert doc["smoke"]["command"][1:] == ["fake_train.py", "--steps", "2"]


def test_list_presets_shows_how_each_resume_is_judged(cli, tmp_path: Path) -> None:
    out = cli("smoke", "--list-presets", cwd=tmp_path).out
    modes = {}
    for line in out.splitlines():
        if not line.startswith(" "):
            name = line.split(":", 1)[0]
        elif line.startswith("  resume mode: "):
            modes[name] = line.split(": ", 1)[1]
    assert modes["plain"] == "exact" and modes["torchtitan"] == "exact"
    for name in ("lightning-cli", "lightning-hydra", "hf-trainer", "hf-trainer-argparse"):
        assert modes[name] == "continues"

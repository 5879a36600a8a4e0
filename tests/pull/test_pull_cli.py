"""``rentcheck manifest build|check`` and ``rentcheck verify``: exit codes, reports, the marker."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import struct
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from rentcheck.pull.manifest import load_manifest
from rentcheck.pull.marker import load_verified_marker
from tests.conftest import run_subprocess


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its digest: nothing may be removed or rewritten."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def small_run(root: Path) -> Path:
    (root / "ckpt").mkdir(parents=True)
    torch.save({"w": torch.randn(64, 32), "step": torch.tensor(7)}, root / "ckpt" / "last.pt")
    save_file({"emb": torch.randn(16, 8)}, str(root / "ckpt" / "model.safetensors"))
    (root / "metrics.json").write_text('{"loss": 0.25}')
    return root


def test_manifest_build_writes_the_roster(tmp_path: Path, cli) -> None:
    root = small_run(tmp_path / "run")
    res = cli("manifest", "build", str(root), "--run-id", "r-1", "--output-format", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "manifest build" and doc["results"] == []
    assert doc["manifest"]["run_id"] == "r-1" and doc["manifest"]["totals"]["files"] == 3
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    assert sorted(e.path for e in manifest.files) == [
        "ckpt/last.pt",
        "ckpt/model.safetensors",
        "metrics.json",
    ]
    assert "wrote" in res.err


def test_manifest_build_output_option_and_report_file(tmp_path: Path, cli) -> None:
    root = small_run(tmp_path / "run")
    out, report = tmp_path / "m.json", tmp_path / "report.json"
    res = cli("manifest", "build", str(root), "--manifest", str(out), "-o", str(report),
              "--output-format", "json")  # fmt: skip
    assert res.code == 0 and res.out == ""
    assert load_manifest(out).files and not (root / "PULL_MANIFEST.json").exists()
    assert json.loads(report.read_text())["manifest"]["path"] == str(out)


def test_manifest_build_reports_leftovers_and_still_writes(tmp_path: Path, cli) -> None:
    root = small_run(tmp_path / "run")
    (root / "ckpt" / "next.pt.tmp").write_bytes(b"half")
    res = cli("manifest", "build", str(root), "--output-format", "concise")
    assert res.code == 1  # written, but verify will fail on it too: the same rule, RC510
    assert "ckpt/next.pt.tmp" in res.out and "RC510" in res.out
    manifest = load_manifest(root / "PULL_MANIFEST.json")
    assert [left.path for left in manifest.leftovers] == ["ckpt/next.pt.tmp"]
    verify = cli("verify", str(root), "--output-format", "concise")
    assert verify.code == 1 and "RC510" in verify.out


def test_manifest_build_refusal_is_one_line_exit_2(tmp_path: Path, cli) -> None:
    root = small_run(tmp_path / "run")
    (root / "passwd").symlink_to("/etc/passwd")
    res = cli("manifest", "build", str(root))
    assert res.code == 2
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rentcheck: error: ")
    assert "points outside ROOT" in lines[0]
    assert not (root / "PULL_MANIFEST.json").exists()


def test_manifest_check(tmp_path: Path, cli) -> None:
    root = small_run(tmp_path / "run")
    assert cli("manifest", "build", str(root), "--run-id", "r-2").code == 0
    ok = cli("manifest", "check", str(root / "PULL_MANIFEST.json"), "--output-format", "json")
    assert ok.code == 0 and json.loads(ok.out)["manifest"]["run_id"] == "r-2"
    bad = tmp_path / "bad.json"
    doc = json.loads((root / "PULL_MANIFEST.json").read_text())
    doc["files"][0]["path"] = "../../.ssh/id_rsa"
    bad.write_text(json.dumps(doc))
    res = cli("manifest", "check", str(bad), "--output-format", "concise")
    assert res.code == 1 and "RC501" in res.out and "'..' component" in res.out
    assert cli("manifest").code == 2  # no action: help, usage error


def test_verify_success_writes_the_marker_and_lists_every_file(pulled: Path, cli) -> None:
    before = snapshot(pulled)
    res = cli("verify", str(pulled), "--expect-run-id", "run-0001", "--jobs", "2",
              "--output-format", "json")  # fmt: skip
    assert res.code == 0, res.out
    doc = json.loads(res.out)["verify"]
    manifest = load_manifest(pulled / "PULL_MANIFEST.json")
    assert {f["path"] for f in doc["files"]} == {e.path for e in manifest.files}
    assert {f["verdict"] for f in doc["files"]} == {"ok"}
    by_path = {f["path"]: f for f in doc["files"]}
    assert by_path["ckpt/model_bf16.pt"]["kind"] == "torch-zip"
    assert by_path["st/model.safetensors"]["tensors"] == 11
    assert doc["manifest"]["sha256"] == manifest.sha256
    marker = load_verified_marker(pulled / "PULL_VERIFIED.json")
    assert doc["marker"] == str(pulled / "PULL_VERIFIED.json")
    assert marker.manifest_sha256 == manifest.sha256 and marker.run_id == "run-0001"
    raw = marker.raw
    assert raw["policy"]["deep"] is False and raw["policy"]["hash"] == "sha256"
    assert raw["settings"]["nonfinite"] == "fail" and raw["totals"]["files"] == len(marker.files)
    assert {f.path: f.sha256 for f in marker.files} == {e.path: e.sha256 for e in manifest.files}
    after = snapshot(pulled)
    assert after.pop("PULL_VERIFIED.json") and after == before  # nothing else touched
    assert not [p for p in pulled.iterdir() if "tmp" in p.name]  # the atomic write left nothing


def test_verify_failure_writes_no_marker_and_removes_nothing(pulled: Path, cli) -> None:
    (pulled / "ckpt" / "model_fp32.pt").write_bytes(b"PK\x03\x04 not really")
    (pulled / "stray.bin").write_bytes(b"from an earlier pull")
    before = snapshot(pulled)
    res = cli("verify", str(pulled), "--output-format", "json")
    assert res.code == 1
    doc = json.loads(res.out)
    verdicts = {f["path"]: f["verdict"] for f in doc["verify"]["files"]}
    assert verdicts["ckpt/model_fp32.pt"] == "failed" and verdicts["stray.bin"] == "failed"
    assert verdicts["ckpt/model_fp16.pt"] == "ok"
    assert {"RC508", "RC512", "RC507"} <= {r["code"] for r in doc["results"]}
    assert doc["verify"]["marker"] is None
    assert not (pulled / "PULL_VERIFIED.json").exists()
    assert snapshot(pulled) == before
    assert "no PULL_VERIFIED.json written" in res.err


def test_verify_missing_file_is_listed_as_missing(pulled: Path, cli) -> None:
    (pulled / "notes.txt").unlink()
    doc = json.loads(cli("verify", str(pulled), "--output-format", "json").out)
    assert {f["path"]: f["verdict"] for f in doc["verify"]["files"]}["notes.txt"] == "missing"


def test_expect_run_id_mismatch_and_usage_errors(pulled: Path, tmp_path: Path, cli) -> None:
    res = cli("verify", str(pulled), "--expect-run-id", "other", "--output-format", "concise")
    assert res.code == 1 and "RC502" in res.out
    assert cli("verify", str(tmp_path / "nowhere")).code == 2
    assert not (pulled / "PULL_VERIFIED.json").exists()


def _plant_nan(path: Path) -> None:
    save_file({"w": torch.tensor([1.0, float("nan"), 2.0])}, str(path))


def test_nonfinite_warn_allows_the_pull(pulled: Path, tmp_path: Path, cli) -> None:
    _plant_nan(pulled / "st" / "nan.safetensors")
    project = tmp_path / "project"
    project.mkdir()
    cli("manifest", "build", str(pulled), "--run-id", "run-nan")
    failing = cli("verify", str(pulled), "--output-format", "concise", cwd=project)
    assert failing.code == 1 and "RC516" in failing.out
    assert not (pulled / "PULL_VERIFIED.json").exists()
    (project / "rentcheck.yaml").write_text('verify:\n  nonfinite: "warn"\n')
    res = cli("verify", str(pulled), "--output-format", "json", cwd=project)
    assert res.code == 0, res.out
    doc = json.loads(res.out)
    nan = [r for r in doc["results"] if r["code"] == "RC516"]
    assert nan and nan[0]["severity"] == "warning" and nan[0]["path"] == "st/nan.safetensors"
    verdicts = {f["path"]: f["verdict"] for f in doc["verify"]["files"]}
    assert verdicts["st/nan.safetensors"] == "warning"
    marker = load_verified_marker(pulled / "PULL_VERIFIED.json")
    assert marker.raw["settings"]["nonfinite"] == "warn"
    assert "RC516" in marker.raw["policy"]["advisory_codes"]


def test_header_cap_comes_from_the_config(pulled: Path, tmp_path: Path, cli) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rentcheck.yaml").write_text("verify:\n  max_header_bytes: 64\n")
    res = cli("verify", str(pulled), "--output-format", "concise", cwd=project)
    assert res.code == 1
    assert "st/model.safetensors" in res.out and "exceeds the cap of 64 bytes" in res.out
    (project / "rentcheck.yaml").write_text('verify:\n  max_header_bytes: "1MiB"\n')
    assert cli("verify", str(pulled), cwd=project).code == 0


def test_verify_config_errors_name_the_key(pulled: Path, tmp_path: Path, cli) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for text, words in (
        ('verify:\n  nonfinite: "maybe"\n', "verify.nonfinite"),
        ("verify:\n  nonfinit: warn\n", "did you mean 'nonfinite'"),
        ("verify:\n  max_header_bytes: 2\n", "between 8 bytes and 1 GiB"),
        ("verify:\n  allow_globals: [os]\n", "dotted names"),
    ):
        (project / "rentcheck.yaml").write_text(text)
        res = cli("verify", str(pulled), cwd=project)
        assert res.code == 2 and words in res.err, res.err


def test_allow_global_option_reaches_the_pickle_scanner(pulled: Path, cli) -> None:
    torch.save({"w": torch.ones(3), "sched": torch.optim.lr_scheduler.StepLR}, pulled / "x.pt")
    cli("manifest", "build", str(pulled), "--run-id", "g")
    res = cli("verify", str(pulled), "--output-format", "concise")
    assert res.code == 1 and "RC514" in res.out and "StepLR" in res.out
    allowed = "torch.optim.lr_scheduler.StepLR"
    assert cli("verify", str(pulled), "--allow-global", allowed).code == 0


def test_no_progress_when_stderr_is_not_a_terminal(pulled: Path) -> None:
    proc = run_subprocess("verify", str(pulled), cwd=pulled.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""  # no status line, no escape codes
    assert "all digests match" in proc.stdout  # what it proved, not a generic line


def _run_with_tty_stderr(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rentcheck", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, **env},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_goes_to_stderr_only(pulled: Path) -> None:
    code, out, err = _run_with_tty_stderr(["verify", str(pulled)], pulled.parent, {})
    assert code == 0
    assert "verify: " in err and " / " in err and "ETA" in err  # bytes done / total, rate, ETA
    assert "verify: read" in err and "files in" in err  # the closing summary
    assert "verify:" not in out and "all digests match" in out
    assert "\x1b[2m" in err  # dimmed detail on a colour terminal
    pulled.joinpath("PULL_VERIFIED.json").unlink()
    code, _, plain = _run_with_tty_stderr(["verify", str(pulled)], pulled.parent, {"NO_COLOR": "1"})
    assert code == 0 and "ETA" in plain and "\x1b[2m" not in plain


def test_hostile_header_length_in_the_cli_is_a_finding(pulled: Path, cli) -> None:
    (pulled / "st" / "lfs.safetensors").write_bytes(struct.pack("<Q", 2**62) + b"{}")
    unlisted = cli("verify", str(pulled), "--output-format", "concise")
    assert unlisted.code == 1 and "RC507" in unlisted.out  # not in the roster: never opened
    assert cli("manifest", "build", str(pulled)).code == 0
    res = cli("verify", str(pulled), "--output-format", "concise")
    assert res.code == 1 and "RC511" in res.out and "exceeds the cap" in res.out

"""Roster outcomes: missing, unexpected, leftovers, run id, empty, containment, special files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rentcheck.model import Severity
from rentcheck.pull.verify import verify_pull, verify_tree


def by_code(result: object) -> dict[str, set[str | None]]:
    out: dict[str, set[str | None]] = {}
    for f in result.findings:  # type: ignore[attr-defined]
        out.setdefault(f.code, set()).add(f.path)
    return out


def test_missing_and_unexpected_files(pulled: Path) -> None:
    (pulled / "ckpt" / "model_fp32.pt").unlink()
    (pulled / "stale_best.pt").write_bytes((pulled / "ckpt" / "model_fp16.pt").read_bytes())
    found = by_code(verify_pull(pulled))
    assert found == {"RC506": {"ckpt/model_fp32.pt"}, "RC507": {"stale_best.pt"}}


def test_truncated_pull_is_a_size_mismatch_and_a_format_error(pulled: Path) -> None:
    target = pulled / "st" / "model.safetensors"
    target.write_bytes(target.read_bytes()[:-100])
    found = by_code(verify_pull(pulled))
    assert found == {"RC508": {"st/model.safetensors"}, "RC511": {"st/model.safetensors"}}


def test_local_leftovers_and_manifest_leftovers(pulled: Path) -> None:
    (pulled / "ckpt" / "model.safetensors.tmp").write_bytes(b"partial")
    (pulled / "ckpt" / ".tmpAb12Cd").write_bytes(b"partial")
    (pulled / "tmp-checkpoint-500").mkdir()
    (pulled / "tmp-checkpoint-500" / "optimizer.pt").write_bytes(b"partial")
    manifest = json.loads((pulled / "PULL_MANIFEST.json").read_text())
    manifest["leftovers"] = [{"path": "ckpt/last.pt.partial", "size": 12, "reason": "x"}]
    (pulled / "PULL_MANIFEST.json").write_text(json.dumps(manifest))
    found = by_code(verify_pull(pulled))
    assert found == {
        "RC510": {
            "ckpt/model.safetensors.tmp",
            "ckpt/.tmpAb12Cd",
            "tmp-checkpoint-500/optimizer.pt",
            "ckpt/last.pt.partial",
        }
    }


def test_run_id_mismatch(pulled: Path) -> None:
    found = by_code(verify_pull(pulled, expected_run_id="run-0002"))
    assert found == {"RC502": {"PULL_MANIFEST.json"}}


def test_empty_manifest_and_empty_directory(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    manifest = {
        "schema": "rentcheck/manifest/v1",
        "run_id": "r",
        "created_at": "2026-01-01T00:00:00Z",
        "host": "box",
        "files": [],
    }
    (root / "PULL_MANIFEST.json").write_text(json.dumps(manifest))
    assert by_code(verify_pull(root)) == {"RC503": {"PULL_MANIFEST.json"}}
    (root / "PULL_MANIFEST.json").unlink()
    assert "RC503" in by_code(verify_tree(root, None))


def test_symlink_to_etc_passwd_is_never_opened(pulled: Path) -> None:
    target = pulled / "ckpt" / "model_fp32.pt"
    target.unlink()
    target.symlink_to("/etc/passwd")
    (pulled / "escape").symlink_to(pulled.parent)  # a directory outside the root
    result = verify_pull(pulled)
    found = by_code(result)
    assert found == {"RC504": {"ckpt/model_fp32.pt", "escape"}}
    assert "ckpt/model_fp32.pt" not in {v.path for v in result.files}
    detail = next(f for f in result.findings if f.path == "ckpt/model_fp32.pt").details
    assert detail["target"] == os.path.realpath("/etc/passwd")


def test_relative_symlink_that_climbs_out(pulled: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.pt"
    shutil.copy(pulled / "ckpt" / "model_fp32.pt", outside)
    link = pulled / "ckpt" / "model_fp32.pt"
    link.unlink()
    link.symlink_to(os.path.relpath(outside, link.parent))
    assert by_code(verify_pull(pulled)) == {"RC504": {"ckpt/model_fp32.pt"}}


def test_symlink_inside_the_root_is_followed(pulled: Path) -> None:
    target = pulled / "ckpt" / "model_fp32.pt"
    real = pulled / "real_fp32.bin"
    target.rename(real)
    target.symlink_to(os.path.relpath(real, target.parent))
    found = by_code(verify_pull(pulled))
    assert found == {"RC507": {"real_fp32.bin"}}  # the link verifies; its target is extra


def test_fifo_directory_symlink_and_bad_names_are_special(pulled: Path) -> None:
    os.mkfifo(pulled / "pipe")
    (pulled / "ckpt_link").symlink_to(pulled / "ckpt")
    (pulled / "dangling").symlink_to(pulled / "nowhere")
    with open(os.path.join(os.fsencode(pulled), b"bad\xffname.bin"), "wb") as f:
        f.write(b"x")
    result = verify_pull(pulled)
    found = by_code(result)
    assert found["RC505"] == {"pipe", "ckpt_link", "dangling", "bad\\xffname.bin"}
    assert set(found) == {"RC505"}
    assert all(f.severity == Severity.ERROR for f in result.findings)


def test_manifest_with_dotdot_paths_is_rejected_but_files_still_checked(pulled: Path) -> None:
    manifest = json.loads((pulled / "PULL_MANIFEST.json").read_text())
    manifest["files"][0]["path"] = "../../.ssh/id_rsa"
    (pulled / "PULL_MANIFEST.json").write_text(json.dumps(manifest))
    result = verify_pull(pulled)
    assert by_code(result) == {"RC501": {"PULL_MANIFEST.json"}}
    assert "'..' component" in result.findings[0].message
    assert len(result.files) > 10  # structure, safety and NaN/Inf still ran


def test_nfc_and_nfd_names_match(tmp_path: Path) -> None:
    from pullkit import run_builder

    root = tmp_path / "box"
    root.mkdir()
    (root / "caf\u00e9.txt").write_text("x")  # NFC on the box
    run_builder(root, check=True)
    pulled = tmp_path / "pulled"
    pulled.mkdir()
    shutil.copy(root / "PULL_MANIFEST.json", pulled)
    (pulled / "cafe\u0301.txt").write_text("x")  # NFD locally (as macOS would store it)
    assert verify_pull(pulled).findings == ()


def test_two_local_names_equal_after_nfc_are_both_checked(tmp_path: Path) -> None:
    from pullkit import run_builder

    root = tmp_path / "pulled"
    root.mkdir()
    (root / "caf\u00e9.txt").write_text("x")
    run_builder(root, check=True)
    (root / "cafe\u0301.txt").write_text("x")
    result = verify_pull(root)
    assert by_code(result) == {"RC507": {"cafe\u0301.txt"}}
    assert "NFC" in result.findings[0].message
    assert len(result.files) == 2

"""The rule table, and outcomes that need an unusual environment (no numpy, a racing writer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from rentcheck.model import Applicability, Severity
from rentcheck.pull import rules
from rentcheck.pull.filecheck import CheckOptions, check_one
from rentcheck.pull.verify import verify_file, verify_tree
from rentcheck.pull.walk import scan_tree

SRC = Path(__file__).resolve().parents[2] / "src"


def test_rule_table_is_complete_and_consistent() -> None:
    table = rules.PULL_RULES
    codes = [r.code for r in table]
    # 501.. in order without gaps; the loader-parity rules (issue 16) start their own run at 530
    first = [c for c in codes if c < "RC530"]
    assert first == [f"RC5{n:02d}" for n in range(1, len(first) + 1)]
    assert codes[len(first) :] == [f"RC5{n}" for n in range(30, 30 + len(codes) - len(first))]
    assert len({r.name for r in table}) == len(table)
    for r in table:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
        assert r.family == "pull"
        assert all([r.summary, r.why, r.example_bad, r.example_good, r.fix])
        assert r.fix_applicability is Applicability.NONE
        assert r.default_severity in (Severity.ERROR, Severity.WARNING, Severity.NOTE)
    constants = {v for k, v in vars(rules).items() if k.isupper() and isinstance(v, str)}
    assert constants == set(rules.RULES_BY_CODE)


def test_finite_scan_skipped_without_numpy(corpus: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        sys.modules["numpy"] = None  # as if numpy were not installed
        sys.path.insert(0, {str(SRC)!r})
        from rentcheck.pull.verify import verify_file
        for name in ("st/model.safetensors", "ckpt/model_bf16.pt", "ckpt/legacy_fp32.pt"):
            _, findings = verify_file({str(corpus)!r} + "/" + name)
            print(name, sorted((f.code, f.severity.label) for f in findings))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 3
    assert all(line.endswith("[('RC517', 'warning')]") for line in lines), lines


def test_protocol_4_save_is_torch_will_refuse_not_hostile(tmp_path: Path) -> None:
    torch.save({"w": torch.ones(3)}, tmp_path / "p4.pt", pickle_protocol=4)
    _, findings = verify_file(tmp_path / "p4.pt")
    assert [f.code for f in findings] == ["RC530"]  # safe data; torch's loader refuses it
    assert "protocol-4" in findings[0].message and "FRAME" in findings[0].message


def test_deep_load_failure_is_reported(tmp_path: Path) -> None:
    # An integer tensor saved with requires_grad=True: well-formed and safe, only torch's
    # own rebuild refuses it.
    torch.save({"w": torch.arange(3)}, tmp_path / "i.pt")
    with zipfile.ZipFile(tmp_path / "i.pt") as zin, zipfile.ZipFile(tmp_path / "g.pt", "w") as z:
        for name in zin.namelist():
            data = zin.read(name)
            z.writestr(name, data.replace(b"\x89", b"\x88") if name.endswith("data.pkl") else data)
    _, findings = verify_file(tmp_path / "g.pt")
    assert findings == []
    _, findings = verify_file(tmp_path / "g.pt", deep=True)
    assert [f.code for f in findings] == ["RC519"]
    assert "require gradients" in findings[0].message


def test_file_replaced_after_listing_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.bin").write_bytes(b"first")
    local, _ = scan_tree(root)
    os.link(root / "a.bin", tmp_path / "keep")  # keeps the old inode from being reused
    (root / "a.bin").unlink()
    (root / "a.bin").write_bytes(b"other")  # a new inode under the same name
    out = check_one(local["a.bin"], None, CheckOptions(False, (), 1 << 16))
    assert [i.code for i in out.issues] == ["RC520"]
    assert out.verdict.sha256 is None


def test_symlink_replacing_a_listed_file_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"first")
    local, _ = scan_tree(tmp_path)
    (tmp_path / "a.bin").unlink()
    (tmp_path / "a.bin").symlink_to("/etc/passwd")
    out = check_one(local["a.bin"], None, CheckOptions(False, (), 1 << 16))
    assert [i.code for i in out.issues] == ["RC520"]  # O_NOFOLLOW refused to open it


def test_unreadable_file(tmp_path: Path) -> None:
    verdict, findings = verify_file(tmp_path / "missing.pt")
    assert [f.code for f in findings] == ["RC520"]
    assert verdict.sha256 is None


def test_not_a_directory(tmp_path: Path) -> None:
    from rentcheck.errors import UsageError

    with pytest.raises(UsageError):
        verify_tree(tmp_path / "nope", None)

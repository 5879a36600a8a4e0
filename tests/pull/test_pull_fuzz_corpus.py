"""Every file the differential fuzzer (benchmarks/verify_fuzz.py) found verify passing while a
real loader refused it (or, for two, ran the canary), kept in ``data/fuzz/`` as found: verify
must refuse each one now, and torch's weights_only loader (the oracle, run in a throwaway
process) must refuse it too. Add a case by dropping the fuzzer's ``--out`` file here."""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle import ran_payload

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file

CASES = sorted((Path(__file__).parent / "data" / "fuzz").iterdir())


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_verify_refuses_what_the_fuzzer_found(path: Path) -> None:
    _, findings = verify_file(path)
    assert any(f.severity >= Severity.ERROR for f in findings), findings


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_the_oracle_still_refuses_or_runs_them(tmp_path: Path, path: Path) -> None:
    """The corpus stays meaningful: weights_only refuses every case (none runs code there)."""
    import subprocess
    import sys

    code = "import sys, torch; torch.load(sys.argv[1], weights_only=True)"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         timeout=120, check=False, cwd=tmp_path)  # fmt: skip
    assert out.returncode != 0 or ran_payload(path, "torch-full"), path.name

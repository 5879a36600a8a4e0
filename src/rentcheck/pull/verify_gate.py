"""The verify gate, once: run it on a pulled folder, judge it, write PULL_VERIFIED.json only
when the one verdict passes, and say what a pass proved.

``rentcheck verify``, the verify inside ``rentcheck pull`` and the pytest pull items all call
``verify_gate``; none of them judges, marks or words a verify of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rentcheck.config import Config
    from rentcheck.gates.judge import GateResult, Verdict
    from rentcheck.gates.run import GateRun
    from rentcheck.model import Finding
    from rentcheck.pull.settings import VerifySettings
    from rentcheck.pull.verify import Progress, VerifyResult

__all__ = ["REPORT_OK_ROWS", "judged_away", "sha256_of", "verify_gate"]

REPORT_OK_ROWS = 1000  # ok files listed in a text run's last-run report (all with json)
_IS_CHECKPOINT = re.compile("safetensors|torch|pickle")


def verify_gate(
    config: Config,
    settings: VerifySettings,
    root: str,
    *,
    manifest: str | None = None,
    expected_run_id: str | None = None,
    marker_extra: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    exit_zero: bool = False,
    record: bool = True,
    via: str = "cli",
) -> tuple[GateRun, GateResult, Verdict]:
    """Verify ``root``; the marker is written only when the verdict passes, and the ledger
    gets the verdict (``record``: the pytest controller records for its items)."""
    from rentcheck.gates.judge import GateResult
    from rentcheck.gates.run import GateRun
    from rentcheck.pull.gate import file_verdicts, run_verify, verify_summary
    from rentcheck.pull.marker import write_verified_marker
    from rentcheck.pull.rules import RULES_BY_CODE

    # numpy's BLAS starts a pool of spinning threads at import; verify never multiplies a
    # matrix, and those threads cost the hashing workers CPU (this process only).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    started = time.monotonic()
    result = run_verify(
        root, settings, manifest=manifest, expected_run_id=expected_run_id, progress=progress
    )
    seconds = round(time.monotonic() - started, 3)
    manifest_digest = None if result.manifest is None else "sha256:" + result.manifest.sha256
    gate = GateResult(
        "verify",
        list(result.findings),
        files_checked=len(result.files),
        advisory=settings.advisory,
        evidence={"manifest": manifest_digest} if manifest_digest else {},
    )
    run = GateRun(config, "verify", manifest=manifest_digest, via=via)
    # verify reports RC5xx only; the full rule table costs start-up time
    verdict = run.conclude(gate, exit_zero=exit_zero, rules=RULES_BY_CODE, record=False)
    marker = None
    if verdict.passed:
        marker = write_verified_marker(
            result,
            fail_level=verdict.fail_level,
            allow=settings.advisory | judged_away(result.findings, verdict),
            extra={"settings": settings.policy(), "seconds": seconds, **(marker_extra or {})},
        )
        gate.evidence["marker"] = "sha256:" + sha256_of(str(marker))
    gate.extras = {
        "verify": {
            "root": os.fspath(root),
            **verify_summary(result),
            "marker": None if marker is None else str(marker),
            "deep": settings.deep,
            "hash": "sha256",
            "settings": settings.policy(),
            "bytes_read": result.bytes_read,
            "seconds": seconds,
            # JSON output lists every file. Otherwise the rows only reach the last-run
            # report that `rentcheck report` reads: every file that is not ok, and the first
            # REPORT_OK_ROWS that are (a row per file of a million files is hundreds of MB).
            "files": file_verdicts(
                result,
                verdict.fail_level,
                settings.advisory,
                ok_limit=None if config.output_format == "json" else REPORT_OK_ROWS,
            ),
            "files_total": len(result.files),
        }
    }
    if record:
        run.record(gate, verdict)
    if marker is not None:
        gate.headline = (f"verified: wrote {marker}",)
        gate.proved = what_verify_proved(result)
    return run, gate, verdict


def sha256_of(path: str) -> str:
    """A file's SHA-256, read 1 MiB at a time (a million-file marker is ~170 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def judged_away(findings: Iterable[Finding], verdict: Verdict) -> frozenset[str]:
    """Codes the selection dropped everywhere (an ``ignore``, a host's too): the marker
    lists them as advisory instead of refusing a pull its judgement passed."""
    kept = {f.code for f in verdict.findings}
    return frozenset(f.code for f in findings if f.code not in kept)


def what_verify_proved(result: VerifyResult) -> str:
    """What a clean verify proved: files, bytes, digests, and the checkpoints judged
    (structurally valid, safe to load, finite)."""
    from rentcheck.pull.progress import human_bytes
    from rentcheck.pull.verdicts import tally

    nbytes, kinds, tensors = tally(result.files)  # from the columns: no row made
    checkpoints = sum(n for kind, n in kinds.items() if _IS_CHECKPOINT.match(kind))
    said = f"{len(result.files)} files, {human_bytes(nbytes)}, all digests match"
    if checkpoints:
        checks = "loaded with torch too" if result.deep else "safe to load"
        said += (
            f"; {checkpoints} checkpoint(s) structurally valid, {checks}, {tensors} tensors finite"
        )
    return said + "."

"""GPU rules on recorded facts (this machine has no GPU): nvidia-smi samples with new and old
field names, its header, Xid kernel lines with hex bus ids, torch builds."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rentcheck.box.gpu import (
    driver_cuda,
    gpu_findings,
    normalize_bus_id,
    parse_gpus,
    parse_xid,
)
from rentcheck.box.settings import AuditSettings
from rentcheck.model import Severity
from rentcheck.payload.probe import EVENT_FIELDS, THROTTLE_FIELDS, Probe

DATA = Path(__file__).parent / "data"
GPU_BOX = AuditSettings(expect_gpu=True)


def _query(name: str, fields: str) -> dict[str, Any]:
    return {"fields": fields.split(","), "csv": (DATA / name).read_text(), "rc": 0}


def _facts(**gpu: Any) -> dict[str, Any]:
    torch = gpu.pop("torch", {"python": "py", "torch": "2.4.1+cu121", "cuda": "12.1",
                               "cuda_available": True, "device_count": 2})  # fmt: skip
    base = {
        "nvidia_smi": "/usr/bin/nvidia-smi",
        "query": _query("nvidia-smi-query-event.csv", EVENT_FIELDS),
        "header": (DATA / "nvidia-smi-header.txt").read_text(),
        "xid_lines": [],
    }
    return {"gpu": {**base, **gpu}, "torch": torch}


def _codes(facts: dict[str, Any], settings: AuditSettings = GPU_BOX) -> list[str]:
    return sorted(f.code for f in gpu_findings(facts, settings, "gpu-box"))


def test_new_field_names_parse_and_judge() -> None:
    gpus = parse_gpus(_query("nvidia-smi-query-event.csv", EVENT_FIELDS))
    assert [g["index"] for g in gpus] == ["0", "1"]
    assert gpus[0]["hw_thermal_slowdown"] == "Active" and gpus[0]["memory.used"] == "71234"
    found = {f.code: f for f in gpu_findings(_facts(), GPU_BOX, "gpu-box")}
    assert set(found) == {"RC311", "RC312"}
    assert "GPU 0" in found["RC311"].message and "71234 of 81920 MiB" in found["RC311"].message
    assert "hw_thermal_slowdown" in found["RC312"].message


def test_old_throttle_field_names_parse_too() -> None:
    query = _query("nvidia-smi-query-throttle.csv", THROTTLE_FIELDS)
    gpus = parse_gpus(query)
    assert gpus[0]["hw_slowdown"] == "Active" and gpus[0]["hw_power_brake_slowdown"] is None
    facts = _facts(query=query, header=None)
    # No header: the table says driver 470.182 supports CUDA 11.4, older than torch's 12.1.
    assert _codes(facts) == ["RC310", "RC312"]
    facts["torch"]["cuda"] = "11.3"
    assert _codes(facts) == ["RC312"]


def test_driver_cuda_from_header_or_table() -> None:
    header = (DATA / "nvidia-smi-header.txt").read_text()
    assert driver_cuda(header, None) == (12, 2)
    assert driver_cuda(None, "470.182.03") == (11, 4)
    assert driver_cuda(None, "550.54.14") == (12, 4)
    assert driver_cuda(None, "440.33") is None
    assert driver_cuda(None, None) is None


def test_driver_too_old_for_torch() -> None:
    facts = _facts()
    facts["torch"]["cuda"] = "12.4"  # header says the driver supports 12.2: same major
    minor = [f for f in gpu_findings(facts, GPU_BOX, "h") if f.code == "RC310"]
    assert len(minor) == 1 and minor[0].severity is Severity.WARNING
    facts["torch"]["cuda"] = "13.0"
    major = [f for f in gpu_findings(facts, GPU_BOX, "h") if f.code == "RC310"]
    assert major[0].severity is Severity.ERROR and "CUDA 12.2" in major[0].message


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        ({"python": "py", "error": "ModuleNotFoundError: No module named 'torch'"}, "imported"),
        ({"python": "py", "torch": "2.4.1+cpu", "cuda": None}, "CPU-only"),
        ({"python": "py", "torch": "2.4.1", "cuda": "12.1", "cuda_available": False}, "False"),
    ],
)
def test_torch_without_cuda_is_rc309(torch: dict[str, Any], expected: str) -> None:
    found = [f for f in gpu_findings(_facts(torch=torch), GPU_BOX, "h") if f.code == "RC309"]
    assert len(found) == 1 and expected in found[0].message


def test_no_nvidia_smi_or_too_few_gpus_is_rc309() -> None:
    facts = {"gpu": {"nvidia_smi": None, "query": None, "header": None, "xid_lines": None}}
    assert _codes(facts) == ["RC309"]
    assert _codes(facts, AuditSettings(expect_gpu=False)) == []
    assert "RC309" in _codes(_facts(), AuditSettings(expect_gpu=True, min_gpus=4))


def test_xid_lines_with_hex_bus_ids() -> None:
    lines = (DATA / "dmesg-xid.txt").read_text().splitlines()
    parsed = [parse_xid(line) for line in lines]
    assert [p[:2] for p in parsed if p] == [
        ("0000:3b:00", 79),
        ("0000:3b:00", 79),
        ("0000:af:00", 48),
        ("0000:af:00", 13),
        ("0000:65:00", 64),
    ]
    assert parsed[0] is None  # "GPU at PCI:..." is not an Xid
    found = gpu_findings(_facts(xid_lines=lines), AuditSettings(expect_gpu=False), "h")
    xids = {f.details["xid"]: f for f in found if f.code == "RC313"}
    assert set(xids) == {79, 48, 13, 64}  # the repeated 79 is reported once
    assert xids[79].severity is Severity.ERROR and "GPU 0 bus 0000:3b:00" in xids[79].message
    assert xids[48].severity is Severity.ERROR and "GPU 1" in xids[48].message
    assert xids[13].severity is Severity.WARNING


def test_bus_id_normalisation() -> None:
    assert normalize_bus_id("00000000:3B:00.0") == "0000:3b:00"
    assert normalize_bus_id("PCI:0000:AF:00") == "0000:af:00"


FAKE_SMI = """#!/bin/sh
# A recorded old-driver nvidia-smi: no clocks_event_reasons fields.
case "$*" in
  *clocks_event_reasons*)
    echo 'Field "clocks_event_reasons.active" is not a valid field to query.'; exit 2 ;;
  *--query-gpu*) cat "{data}/nvidia-smi-query-throttle.csv" ;;
  *) cat "{data}/nvidia-smi-header.txt" ;;
esac
"""


def test_probe_falls_back_to_old_field_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No GPU here: a stand-in nvidia-smi replays recorded output of an old driver, so the
    # probe's real query, fallback and dmesg paths run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI.format(data=DATA))
    (bin_dir / "dmesg").write_text(f"#!/bin/sh\ncat {DATA}/dmesg-xid.txt\n")
    for tool in ("nvidia-smi", "dmesg"):
        (bin_dir / tool).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    facts = Probe({"gpu": True, "sections": ["gpu"]}).gather()
    assert facts["gpu"]["query"]["fields"] == THROTTLE_FIELDS.split(",")
    assert "CUDA Version: 12.2" in facts["gpu"]["header"]
    assert len(facts["gpu"]["xid_lines"]) == 5
    assert {"RC312", "RC313"} <= set(_codes(facts))

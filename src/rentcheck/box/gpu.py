"""GPU facts and rules (RC309-RC313), pure: nvidia-smi CSV, its header, Xid kernel lines, torch.

The probe sends raw nvidia-smi and dmesg text; parsing happens here so recorded samples (old and
new field names, hex PCI bus ids) test the same code that judges a real box.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rentcheck.box.findings import dig, finding
from rentcheck.box.settings import AuditSettings
from rentcheck.model import Finding, Severity

__all__ = [
    "driver_cuda",
    "gpu_findings",
    "normalize_bus_id",
    "parse_gpus",
    "parse_xid",
]

# Minimum Linux driver for each CUDA toolkit (NVIDIA's release notes, "CUDA Toolkit and
# Corresponding Driver Versions"), used when nvidia-smi's header is not available.
DRIVER_FOR_CUDA = (
    ((13, 0), (580, 65)),
    ((12, 9), (575, 51)),
    ((12, 8), (570, 26)),
    ((12, 6), (560, 28)),
    ((12, 5), (555, 42)),
    ((12, 4), (550, 54)),
    ((12, 3), (545, 23)),
    ((12, 2), (535, 54)),
    ((12, 1), (530, 30)),
    ((12, 0), (525, 60)),
    ((11, 8), (520, 61)),
    ((11, 7), (515, 43)),
    ((11, 6), (510, 39)),
    ((11, 5), (495, 29)),
    ((11, 4), (470, 42)),
    ((11, 3), (465, 19)),
    ((11, 2), (460, 27)),
    ((11, 1), (455, 23)),
    ((11, 0), (450, 36)),
)
FATAL_XIDS = {48: "double-bit ECC error", 79: "GPU has fallen off the bus"}
SERIOUS_XIDS = {
    63: "row remap / page retirement event",
    64: "row remap failure",
    74: "NVLink error",
    92: "high single-bit ECC rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}
# clocks_event_reasons / clocks_throttle_reasons that mean "slowed by heat, power or hardware"
THROTTLE_KEYS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "sw_thermal_slowdown",
    "hw_power_brake_slowdown",
)
THROTTLE_MASK = 0x8 | 0x20 | 0x40 | 0x80
_XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
    r"(?:\.[0-9a-fA-F])?\): (?P<code>\d+)(?P<rest>.*)"
)
_HEADER_RE = re.compile(r"Driver Version:\s*([0-9.]+).*?CUDA Version:\s*([0-9.]+)", re.DOTALL)
_MISSING = ("[N/A]", "[Not Supported]", "N/A", "[Unknown Error]", "")


def normalize_bus_id(text: str) -> str:
    """``00000000:3B:00.0`` and ``PCI:0000:3b:00`` -> ``0000:3b:00``."""
    text = text.lower().removeprefix("pci:").split(".")[0]
    domain, _, rest = text.partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in _MISSING else text


def parse_gpus(query: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """One dict per GPU from ``--query-gpu`` CSV; reason fields under short names."""
    if not query or query.get("rc") != 0:
        return []
    names = [f.split(".", 1)[1] if f.startswith("clocks_") else f for f in query["fields"]]
    gpus = []
    for line in str(query.get("csv", "")).splitlines():
        if not line.strip():
            continue
        values = [_value(v) for v in line.split(",")]
        gpus.append(dict(zip(names, values, strict=False)))  # a short row: fields missing
    return gpus


def parse_xid(line: str) -> tuple[str, int, str] | None:
    """(bus id, Xid code, detail) from a kernel log line, hex bus ids included."""
    match = _XID_RE.search(line)
    if not match:
        return None
    detail = match.group("rest").lstrip(", ").strip()
    return normalize_bus_id(match.group("bus")), int(match.group("code")), detail


def _version(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text)
    return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) if parts else None


def _mib(text: str | None) -> int | None:
    try:
        return int(float(text)) if text else None
    except ValueError:
        return None


def driver_cuda(header: str | None, driver: str | None) -> tuple[int, int] | None:
    """The newest CUDA the driver supports: nvidia-smi's header, else the release-note table."""
    match = _HEADER_RE.search(header or "")
    if match:
        return _version(match.group(2))
    installed = _version(driver)
    if installed is None:
        return None
    for cuda, needed in DRIVER_FOR_CUDA:
        if installed >= needed:
            return cuda
    return None


def _torch_problem(torch: Mapping[str, Any] | None) -> str | None:
    if not torch:
        return None
    python = torch.get("python", "python")
    if torch.get("error"):
        return f"torch cannot be imported by {python}: {torch['error']}"
    if not torch.get("cuda"):
        return f"{python} has a CPU-only torch ({torch.get('torch')})"
    if not torch.get("cuda_available"):
        return f"torch.cuda.is_available() is False in {python} (torch {torch.get('torch')})"
    return None


def _visibility(facts: Mapping[str, Any], settings: AuditSettings, host: str) -> list[Finding]:
    gpu = facts.get("gpu") or {}
    gpus = parse_gpus(gpu.get("query"))
    problems = []
    if not gpu.get("nvidia_smi"):
        problems.append("nvidia-smi is not installed or not on PATH")
    elif len(gpus) < settings.min_gpus:
        problems.append(f"nvidia-smi lists {len(gpus)} GPU(s), {settings.min_gpus} expected")
    torch_problem = _torch_problem(facts.get("torch"))
    if torch_problem:
        problems.append(torch_problem)
    if not problems:
        return []
    return [finding("RC309", "no usable GPU: " + "; ".join(problems), host, gpus=len(gpus))]


def _driver(facts: Mapping[str, Any], host: str) -> list[Finding]:
    torch_cuda = _version(dig(facts, "torch", "cuda"))
    gpus = parse_gpus(dig(facts, "gpu", "query"))
    driver = gpus[0].get("driver_version") if gpus else None
    supported = driver_cuda(dig(facts, "gpu", "header"), driver)
    if torch_cuda is None or supported is None or supported >= torch_cuda:
        return []
    same_major = supported[0] == torch_cuda[0]
    text = (
        f"driver {driver or '?'} supports CUDA {supported[0]}.{supported[1]}, but torch "
        f"{dig(facts, 'torch', 'torch')} was built for CUDA {torch_cuda[0]}.{torch_cuda[1]}"
    )
    if same_major:
        text += " (minor-version compatibility may run most kernels; PTX JIT and new APIs fail)"
    severity = Severity.WARNING if same_major else None
    return [finding("RC310", text, host, severity, driver=driver)]


def _per_gpu(facts: Mapping[str, Any], settings: AuditSettings, host: str) -> list[Finding]:
    found = []
    for gpu in parse_gpus(dig(facts, "gpu", "query")):
        index = gpu.get("index")
        total, used = _mib(gpu.get("memory.total")), _mib(gpu.get("memory.used"))
        if total and used is not None and used / total >= settings.max_vram_in_use:
            found.append(
                finding(
                    "RC311",
                    f"GPU {index} ({gpu.get('name')}): {used} of {total} MiB already in use "
                    "before launch",
                    host,
                    gpu=index,
                )
            )
        active = [k for k in THROTTLE_KEYS if (gpu.get(k) or "").lower() == "active"]
        mask = gpu.get("active")
        if not active and mask and mask.lower().startswith("0x") and int(mask, 16) & THROTTLE_MASK:
            active = [f"reasons mask {mask}"]
        if active:
            found.append(
                finding(
                    "RC312",
                    f"GPU {index} ({gpu.get('name')}) is slowed down: {', '.join(active)} "
                    f"(temperature {gpu.get('temperature.gpu')} C)",
                    host,
                    gpu=index,
                )
            )
    return found


def _xids(facts: Mapping[str, Any], host: str) -> list[Finding]:
    lines = dig(facts, "gpu", "xid_lines") or []
    by_bus = {
        normalize_bus_id(g["pci.bus_id"]): g.get("index")
        for g in parse_gpus(dig(facts, "gpu", "query"))
        if g.get("pci.bus_id")
    }
    seen: dict[tuple[str, int], str] = {}
    for line in lines:
        parsed = parse_xid(line)
        if parsed:
            seen.setdefault(parsed[:2], parsed[2])
    found = []
    for (bus, code), detail in sorted(seen.items()):
        meaning = FATAL_XIDS.get(code) or SERIOUS_XIDS.get(code) or detail or "see NVIDIA's table"
        where = f"GPU {by_bus[bus]} " if bus in by_bus else ""
        found.append(
            finding(
                "RC313",
                f"Xid {code} on {where}bus {bus} ({meaning}) in the kernel log; it may predate "
                "this rental",
                host,
                None if code in FATAL_XIDS else Severity.WARNING,
                xid=code,
                bus=bus,
            )
        )
    return found


def gpu_findings(facts: Mapping[str, Any], settings: AuditSettings, host: str) -> list[Finding]:
    found = _per_gpu(facts, settings, host) + _xids(facts, host)
    if settings.gpu_expected(host):
        found = _visibility(facts, settings, host) + _driver(facts, host) + found
    return found

"""Why a run failed, from its exit status, its log and what the step shim saw.

Pure: (exit status, log lines, shim summary) -> one failure class with the line that proves it.
The order of the checks is the order of specificity: a CUDA assertion is also a crash, a missing
``flash_attn`` is also an import error, but only the specific class says what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rentcheck.run.logparse import Traceback, last_traceback, nonfinite_loss_lines, strip_ansi
from rentcheck.run.shimreport import BUSY_FRACTION, ShimSummary, busy, pace, still_stepping

__all__ = ["GPU_ONLY_PACKAGES", "Failure", "classify_failure"]

# Import names of packages that need an NVIDIA GPU (or its toolkit) to import or to work.
GPU_ONLY_PACKAGES = frozenset(
    {
        "flash_attn",
        "flash_attn_2_cuda",
        "xformers",
        "bitsandbytes",
        "apex",
        "amp_C",
        "fused_layer_norm_cuda",
        "transformer_engine",
        "mamba_ssm",
        "causal_conv1d",
        "selective_scan_cuda",
        "vllm",
        "cupy",
        "pynvml",
        "nvidia_smi",
        "deepspeed",
        "triton",
        "tensorrt",
        "pycuda",
        "liger_kernel",
        "nccl",
    }
)

_CUDA_HARDCODED = re.compile(
    r"Torch not compiled with CUDA enabled|No CUDA GPUs are available|"
    r"Found no NVIDIA driver on your system|CUDA driver version is insufficient|"
    r"all CUDA-capable devices are busy or unavailable|"
    r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False|"
    r"Expected all tensors to be on the same device|invalid device ordinal|"
    r"CUDA error: no CUDA-capable device is detected"
)
_NEEDS_GPU = re.compile(
    r"lib(?:cudart|cuda|cublas|cudnn|nccl)\S*\.so|CUDA_HOME|\bnvcc\b|no kernel image is available|"
    r"requires? (?:a )?(?:CUDA|GPU)|GPU is required|CUDA Setup failed|"
    r"only supports? (?:CUDA|GPU)"
)
_NEEDS_NETWORK = re.compile(
    r"OfflineModeIsEnabled|LocalEntryNotFoundError|HF_HUB_OFFLINE|TRANSFORMERS_OFFLINE|"
    r"couldn't connect to 'https?://|Cannot find the requested files in the (?:local )?cache|"
    r"outgoing traffic has been disabled|Temporary failure in name resolution|"
    r"Name or service not known|Max retries exceeded with url|ConnectionError|"
    r"Network is unreachable|getaddrinfo failed|urlopen error|"
    # Hub downloads under HF_HUB_OFFLINE / HF_DATASETS_OFFLINE: often a FileNotFoundError or
    # an OSError that names the Hub, not a missing path of the project.
    r"on the Hugging Face Hub|not a local folder and is not a valid model identifier|"
    r"Couldn't reach '|We couldn't connect to|offline mode is enabled|"
    r"An error happened while trying to locate the file on the Hub"
)
_SHAPE_DTYPE = re.compile(
    r"shapes cannot be multiplied|size mismatch|The size of tensor a|must match the size|"
    r"expected scalar type|Expected (?:object of )?(?:scalar )?type|dtype mismatch|"
    r"Found dtype \w+ but expected|expected (?:input|argument) .* to have|Given groups=|"
    r"shape '\[[^\]]*\]' is invalid|Expected input batch_size|mismatch in (?:shape|dtype)|"
    r"not broadcastable|Sizes of tensors must match|Dimension out of range|"
    r"expected .* (?:dimensions|dims)|result type \w+ can't be cast"
)
_CONFIG = re.compile(
    r"\w*Config\w*(?:Error|Exception)\b|omegaconf\.errors|hydra\.errors|MissingMandatoryValue|"
    r"InstantiationException|Could not override|Key '[^']+' is not in struct|"
    r"missing (?:required )?(?:config(?:uration)? )?(?:keys?|options?|fields?)|"
    r"unknown (?:config(?:uration)? )?(?:keys?|options?)|unrecognized arguments|"
    r"the following arguments are required|invalid choice|No such (?:config|option)",
    re.IGNORECASE,
)
_USAGE = re.compile(r"^usage: ")
_DATA_FRAME = re.compile(r"[/\\]torch[/\\]utils[/\\]data[/\\]|[/\\]datasets[/\\]")
_DATA_FUNC = re.compile(r"__getitem__|__iter__|__next__|collate|_fetch|load_dataset")
_PICKLE = re.compile(r"(?i)can't pickle|pickl")
_SAVE_FRAME = re.compile(r"[/\\]torch[/\\]serialization\.py$|[/\\]safetensors[/\\]")


@dataclass(frozen=True)
class Failure:
    kind: str  # a class name from rentcheck.run.rules.SMOKE_CLASSES
    evidence: str  # the log line (or shim fact) that decided it
    detail: str = ""  # extra words for the message


def _module_of(exception: str) -> str | None:
    match = re.search(
        r"No module named '([^']+)'|cannot import name '[^']+' from '([^']+)'", exception
    )
    if not match:
        return None
    return (match.group(1) or match.group(2) or "").split(".")[0]


def _evidence(lines: Sequence[str], pattern: re.Pattern[str], tb: Traceback | None) -> str | None:
    """The exception line when it matches, else the last matching log line."""
    if tb is not None and pattern.search(tb.exception):
        return tb.exception
    return next((line.strip() for line in reversed(lines) if pattern.search(line)), None)


def _from_traceback(tb: Traceback, tail: Sequence[str]) -> Failure | None:
    exc = tb.exception
    files = [frame[0] for frame in tb.frames]
    funcs = [frame[2] for frame in tb.frames]
    module = _module_of(exc)
    if tb.exception_type in {"ModuleNotFoundError", "ImportError"}:
        if module in GPU_ONLY_PACKAGES or _NEEDS_GPU.search(exc):
            return Failure("needs-gpu", exc, f"`{module}` needs a GPU")
        return Failure("import", exc)
    loading = "Weights only load failed" in exc or (
        "Unpickling" in tb.exception_type and "load" in funcs
    )
    if loading:
        return Failure(
            "data",
            exc,
            "torch.load refused the file: torch >= 2.6 loads with weights_only=True by default; "
            "pass weights_only=False for a file you wrote yourself (see RC203)",
        )
    # A frame in torch/serialization.py is no save by itself: torch.load lives there too.
    saving = any("save" in fn for fn in funcs)
    if saving and (any(_SAVE_FRAME.search(f) for f in files) or _PICKLE.search(exc)):
        return Failure("checkpoint-save", exc)
    if any(_DATA_FRAME.search(f) for f in files) or any(_DATA_FUNC.search(f) for f in funcs):
        return Failure("data", exc)
    if _SHAPE_DTYPE.search(exc):
        return Failure("shape-dtype", exc)
    config_key = tb.exception_type == "KeyError" and any("config" in f.lower() for f in files)
    if _CONFIG.search(exc) or config_key:
        return Failure("config", exc)
    if tb.exception_type in {"FileNotFoundError", "IsADirectoryError", "NotADirectoryError"}:
        return Failure("config", exc, "a path in the command or config does not exist")
    return None


def classify_failure(
    returncode: int | None,
    timed_out: bool,
    lines: Sequence[str],
    shim: ShimSummary,
    observed_steps: int,
    *,
    ended_at: float = 0.0,
    steps: int = 0,
    section: str = "smoke",
    cpu_at_limit: float | None = None,
    started: float = 0.0,
) -> Failure | None:
    """The failure class of a run, or None when it passed. A run that timed out while the
    shim saw it stepping (at ``ended_at``) was too slow for its ``steps``, not hung."""
    clean = [strip_ansi(line) for line in lines]
    if shim.nonfinite:
        nf = shim.nonfinite
        return Failure(
            "non-finite",
            f"parameter {nf.get('param')} {nf.get('shape')} of the optimizer is NaN/Inf",
            f"after optimizer step {nf.get('step')}",
        )
    nan_lines = nonfinite_loss_lines(clean)
    if nan_lines:
        return Failure("non-finite", nan_lines[0].strip())
    if timed_out:
        if ended_at and still_stepping(shim.step_times, ended_at):
            return _too_slow(shim, ended_at, steps, section)
        cores = busy(shim, cpu_at_limit, ended_at, started) if ended_at else None
        if cores is not None and cores >= BUSY_FRACTION:
            return _busy(shim, ended_at, started, cores, section)
        last = next((line.strip() for line in reversed(clean) if line.strip()), "(no output)")
        since = f", none for {ended_at - shim.step_times[-1]:.0f} s" if shim.step_times else ""
        idle = f", {cores:.2f} CPU cores busy since" if cores is not None and since else ""
        return Failure("hang", last, f"after {observed_steps} optimizer step(s){since}{idle}")
    if shim.failed_saves:
        return Failure("checkpoint-save", str(shim.failed_saves[0].get("error")))
    if returncode == 0:
        if observed_steps == 0:
            what = "a step that changed a parameter" if shim.idle else "an optimizer step"
            return Failure("no-steps", f"exit 0 without {what}", _unseen(shim))
        return None
    return _crash_class(returncode, clean, observed_steps)


def _too_slow(shim: ShimSummary, ended_at: float, steps: int, section: str) -> Failure:
    per_step = pace(shim.step_times) or 0.0
    evidence = (
        f"still stepping at the time limit: step {shim.steps} of {steps or '?'}, "
        f"about {per_step:.2f} s per step (last step {ended_at - shim.step_times[-1]:.1f} s "
        "before the limit)"
    )
    left = max(0, steps - shim.steps)
    more = f"the {left} steps left need about {left * per_step:.0f} s more; " if steps else ""
    fix = f"{more}lower `steps` or raise `timeout` in the {section} section"
    return Failure("too-slow", evidence, fix)


def _busy(
    shim: ShimSummary, ended_at: float, started: float, cores: float, section: str
) -> Failure:
    """Timed out between two steps (or before the first) while working: not hung."""
    if shim.step_times:
        where = f"after step {shim.steps}, no step for {ended_at - shim.step_times[-1]:.0f} s"
    else:
        where = f"no step yet after {ended_at - started:.0f} s"
    evidence = (
        f"busy at the time limit ({where}, using {cores:.1f} CPU cores): an evaluation, "
        "sampling or data preparation between steps, not a wait"
    )
    fix = (
        f"make that work smaller in the {section} args (fewer eval/sample steps, a smaller "
        f"model or dataset), lower `steps`, or raise `timeout` in the {section} section"
    )
    return Failure("too-slow", evidence, fix)


def _unseen(shim: ShimSummary) -> str:
    """Why no step was seen: the evidence a passing smoke needs and did not get."""
    if shim.idle:
        return (
            f"optimizer.step() ran {shim.steps} time(s) but changed no parameter: no gradient "
            "reached the optimizer's parameters (backward missing, a detached loss, frozen "
            "parameters) or the learning rate is 0"
        )
    if shim.active:
        return (
            "the step shim saw no torch.optim step and no parameter changed between two "
            "backward passes, and no log line matched `step-regex`"
        )
    return (
        f"the step shim was {shim.status} and no log line matched `step-regex`: smoke needs the "
        "shim or one log line per step to see that the run trained"
    )


def _crash_class(returncode: int | None, clean: Sequence[str], observed_steps: int) -> Failure:
    tb = last_traceback(clean)
    tail = clean[-200:]
    cuda = _evidence(tail, _CUDA_HARDCODED, tb)
    if cuda:
        return Failure("hard-coded-cuda", cuda)
    if tb is not None and tb.exception_type in {"ModuleNotFoundError", "ImportError"}:
        found = _from_traceback(tb, tail)
        if found:
            return found
    gpu = _evidence(tail, _NEEDS_GPU, tb)
    if gpu:
        return Failure("needs-gpu", gpu)
    network = _evidence(tail, _NEEDS_NETWORK, tb)
    if network:
        return Failure("needs-network", network)
    if tb is not None:
        found = _from_traceback(tb, tail)
        if found:
            return found
        return Failure("crash", tb.exception or "a Python traceback", _status(returncode))
    usage = _evidence(tail, _USAGE, None)
    config = _evidence(tail, _CONFIG, None)
    if config or usage:
        return Failure("config", config or usage or "")
    if returncode == 2:
        # The argparse convention: exit status 2 without a traceback is a usage error.
        last = next((line.strip() for line in reversed(tail) if line.strip()), "(no output)")
        return Failure("config", last, "exit status 2 (a usage error by convention)")
    last = next((line.strip() for line in reversed(tail) if line.strip()), "(no output)")
    return Failure("crash", last, _status(returncode))


def _status(returncode: int | None) -> str:
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        import signal

        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (the OOM killer?)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}"
    return f"exit status {returncode}"

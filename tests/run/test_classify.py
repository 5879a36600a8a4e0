"""Failure classes from real-looking logs: data in, one class and its evidence out."""

from __future__ import annotations

import pytest

from rentcheck.run.classify import classify_failure
from rentcheck.run.shimreport import ShimSummary

NO_SHIM = ShimSummary(status="unavailable")
ACTIVE = ShimSummary(status="active", steps=0)


def _tb(*frames: str, exc: str) -> list[str]:
    lines = ["Traceback (most recent call last):"]
    for frame in frames:
        path, func = frame.split(":")
        lines += [f'  File "{path}", line 10, in {func}', "    code()"]
    return [*lines, exc]


MAIN = "/p/train.py:main"
TOP = "/p/train.py:<module>"
CASES = [
    ("import", 1, _tb(TOP, exc="ModuleNotFoundError: No module named 'helpers'")),
    ("needs-gpu", 1, _tb(TOP, exc="ModuleNotFoundError: No module named 'flash_attn'")),
    ("needs-gpu", 1, _tb(TOP, exc="ImportError: libcudart.so.12: cannot open shared object")),
    (
        "hard-coded-cuda",
        1,
        _tb(MAIN, "/v/torch/cuda/__init__.py:_lazy_init",
            exc="AssertionError: Torch not compiled with CUDA enabled"),
    ),
    ("hard-coded-cuda", 1, _tb(MAIN, exc="RuntimeError: No CUDA GPUs are available")),
    (
        "shape-dtype",
        1,
        _tb(MAIN, "/v/torch/nn/modules/linear.py:forward",
            exc="RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)"),
    ),
    ("shape-dtype", 1, _tb(MAIN, exc="RuntimeError: expected scalar type Float but found Half")),
    (
        "data",
        1,
        _tb(MAIN, "/v/torch/utils/data/dataset.py:__init__",
            exc="AssertionError: Size mismatch between tensors"),
    ),
    ("data", 1, _tb(MAIN, "/p/ds.py:__getitem__", exc="IndexError: list index out of range")),
    (
        "checkpoint-save",
        1,
        _tb("/p/t.py:save_checkpoint", "/v/torch/serialization.py:_save",
            exc="AttributeError: Can't pickle local object 'f.<locals>.<lambda>'"),
    ),
    ("config", 1, _tb(MAIN, exc="omegaconf.errors.ConfigAttributeError: Key 'lr' not in struct")),
    ("config", 2, ["error: section 'train': missing keys ['keep_last'], unknown keys []"]),
    ("config", 2, ["usage: train.py [-h]", "train.py: error: unrecognized arguments: --stpes"]),
    ("config", 2, ["something went wrong"]),
    (
        "needs-network",
        1,
        _tb(MAIN, exc="OSError: We couldn't connect to 'https://huggingface.co' to load this"),
    ),
    ("crash", 1, _tb(MAIN, exc="RuntimeError: something else")),
    ("crash", -9, ["step=1 loss=1.0"]),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "code", "lines"), CASES)
def test_crash_classes(kind: str, code: int, lines: list[str]) -> None:
    failure = classify_failure(code, False, ["some start-up noise", *lines], NO_SHIM, 0)
    assert failure is not None and failure.kind == kind, failure


def test_sigkill_mentions_the_oom_killer() -> None:
    failure = classify_failure(-9, False, ["step=1 loss=1.0"], NO_SHIM, 1)
    assert failure is not None and "OOM" in failure.detail


def test_non_finite_from_the_shim_or_the_log_wins_over_the_exit_status() -> None:
    shim = ShimSummary(status="active", steps=1, nonfinite={"step": 1, "param": 0, "shape": [4]})
    failure = classify_failure(3, False, [], shim, 1)
    assert (
        failure is not None
        and failure.kind == "non-finite"
        and "after optimizer step 1" in failure.detail
    )
    failure = classify_failure(0, False, ["step=1 loss=nan"], NO_SHIM, 1)
    assert (
        failure is not None
        and failure.kind == "non-finite"
        and failure.evidence == "step=1 loss=nan"
    )


def test_timeout_save_error_and_no_steps() -> None:
    hang = classify_failure(None, True, ["waiting for peers"], NO_SHIM, 0)
    assert hang is not None and hang.kind == "hang" and hang.evidence == "waiting for peers"
    shim = ShimSummary(status="active", steps=2, saves=({"ok": False, "error": "OSError: disk"},))
    save = classify_failure(1, False, [], shim, 2)
    assert save is not None and save.kind == "checkpoint-save" and save.evidence == "OSError: disk"
    idle = classify_failure(0, False, ["done"], ACTIVE, 0)
    assert idle is not None and idle.kind == "no-steps"
    # Without the shim and without step lines, exit 0 is no evidence that the run trained.
    blind = classify_failure(0, False, ["done"], NO_SHIM, 0)
    assert blind is not None and blind.kind == "no-steps" and "`step-regex`" in blind.detail
    assert classify_failure(0, False, ["step=1 loss=0.5"], NO_SHIM, 1) is None
    assert classify_failure(0, False, ["step=1 loss=0.5"], ACTIVE, 1) is None


def test_the_evidence_is_the_exception_line_not_the_source_line_above_it() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/v/torch/cuda/__init__.py", line 522, in _lazy_init',
        '    raise AssertionError("Torch not compiled with CUDA enabled")',
        "AssertionError: Torch not compiled with CUDA enabled",
    ]
    failure = classify_failure(1, False, lines, NO_SHIM, 0)
    assert failure is not None
    assert failure.evidence == "AssertionError: Torch not compiled with CUDA enabled"


def test_a_hub_download_under_offline_mode_is_network_not_a_missing_path() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "run_clm.py", line 320, in main',
        "    raw_datasets = load_dataset(data_args.dataset_name)",
        "FileNotFoundError: Couldn't find a dataset script at /w/wikitext/wikitext.py or any data "
        "file in the same directory. Couldn't find 'wikitext' on the Hugging Face Hub either: "
        "LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub",
    ]
    failure = classify_failure(1, False, lines, NO_SHIM, 0)
    assert failure is not None and failure.kind == "needs-network", failure


def test_torch_load_refusing_a_file_is_a_load_not_a_save() -> None:
    """pytorch/examples time_sequence_prediction: torch.load('traindata.pt') of a numpy array
    under torch >= 2.6 (found by running it). serialization.py holds load as well as save."""
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 47, in <module>',
        "    data = torch.load('traindata.pt')",
        '  File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 1529, in load',
        "    raise pickle.UnpicklingError(_get_wo_message(str(e))) from None",
        "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do "
        "so you have two options",
    ]
    failure = classify_failure(1, False, lines, NO_SHIM, 0)
    assert failure is not None and failure.kind == "data", failure
    assert "weights_only=False" in failure.detail

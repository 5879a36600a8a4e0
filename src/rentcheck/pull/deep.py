"""``--deep``: ask the reference loaders, after structure and safety checks have passed.

torch and safetensors are imported here, lazily, and only for files whose structure and pickle
safety already passed: ``torch.load`` is only ever called with ``weights_only=True``, with the
same extra globals the static scan allowed for the file (resolved by import: they come from the
project's own configuration, never from the file). torch's messages carry terminal escapes and
spread the reason over several lines; the finding keeps the line that says why, escapes removed.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["DEEP_KINDS", "deep_check", "why_line"]

DEEP_KINDS = frozenset({"safetensors", "torch-zip", "torch-legacy"})
# CSI (colours, cursor), OSC (window titles, links) up to BEL or ST, then any other escape
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The line of a torch.load failure that names the cause (the rest is advice on trusting it).
_WHY = re.compile(r"WeightsUnpickler error|Unsupported|Can only|Trying to|not an allowed|error:")


def why_line(exc: BaseException) -> str:
    """``Type: the line that says why``, without terminal control characters, at most 300."""
    text = _CONTROL.sub("", _ANSI.sub("", str(exc)))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    chosen = next((line for line in lines if _WHY.search(line)), lines[0] if lines else "")
    return f"{type(exc).__name__}: {chosen}"[:300]


def _resolve(name: str) -> object | None:
    """The object a dotted global names (``pkg.mod.Class``), or None if it does not import."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def _safe_globals(torch: Any, allowed: Iterable[str]) -> contextlib.AbstractContextManager[Any]:
    objs = [(obj, name) for name in allowed if (obj := _resolve(name)) is not None]
    if not objs:
        return contextlib.nullcontext()
    ctx: contextlib.AbstractContextManager[Any] = torch.serialization.safe_globals(objs)
    return ctx


def deep_check(path: str, kind: str, allowed: Iterable[str] = ()) -> str | None:
    """None if the reference loader accepts ``path``, else why it refused (one line)."""
    try:
        if kind == "safetensors":
            st: Any = importlib.import_module("safetensors")
            with st.safe_open(path, framework="numpy") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open is not a dict
                    f.get_slice(key).get_shape()
            return None
        torch: Any = importlib.import_module("torch")
        mmap = kind == "torch-zip"  # the legacy format cannot be memory-mapped
        with _safe_globals(torch, allowed):
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        del obj
        return None
    except ImportError as exc:
        return f"cannot run the deep check: {exc.name or exc} is not installed"
    except Exception as exc:  # noqa: BLE001 - any loader failure is the finding
        return why_line(exc)

"""``--deep``: ask the reference loaders, after structure and safety checks have passed.

torch and safetensors are imported here, lazily, and only for files whose structure and pickle
safety already passed: ``torch.load`` is only ever called with ``weights_only=True``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DEEP_KINDS", "deep_check"]

DEEP_KINDS = frozenset({"safetensors", "torch-zip", "torch-legacy"})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def deep_check(path: str, kind: str) -> str | None:
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
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        del obj
        return None
    except ImportError as exc:
        return f"cannot run the deep check: {exc.name or exc} is not installed"
    except Exception as exc:  # noqa: BLE001 - any loader failure is the finding
        return _first_line(exc)

"""The real loaders as the oracle: load one file in a throwaway subprocess beside a canary.

``ran_payload(path, loader)`` loads ``path`` with the named loader in a fresh interpreter whose
working folder is a new temporary folder, and says whether the canary file appeared there
(the hostile payloads of these tests write ``canary`` into their working folder). Loaders:

* ``numpy``: ``np.load(allow_pickle=True)``, then every member of an archive by its name;
* ``torch``: ``torch.load(weights_only=True)``; ``torch-full``: ``weights_only=False``;
* ``pickle``: ``pickle.load``; ``joblib``: ``joblib.load``.

``python oracle.py LOADER PATH`` is the child: it prints ``ok`` or the loader's exception.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

#: What a hostile payload runs: ``exec`` of this text writes the canary.
CANARY_CODE = "open('canary', 'w').write('ran')"


def exec_pickle(protocol: int = 2) -> bytes:
    """A pickle that calls ``builtins.exec(CANARY_CODE)`` when loaded."""
    code = CANARY_CODE.encode()
    body = b"cbuiltins\nexec\n" + b"X" + len(code).to_bytes(4, "little") + code + b"\x85R."
    return (b"\x80" + bytes([protocol]) if protocol >= 2 else b"") + body


def _load(loader: str, path: str) -> object:
    if loader == "numpy":
        import numpy as np

        out = np.load(path, allow_pickle=True)
        if hasattr(out, "files"):
            return [out[name] for name in out.files]
        return out
    if loader in ("torch", "torch-full"):
        import torch

        return torch.load(path, weights_only=loader == "torch")
    if loader == "joblib":
        import joblib

        return joblib.load(path)
    import pickle

    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - the reference loader, in a throwaway process


def ran_payload(path: Path, loader: str, *, timeout: float = 60) -> bool:
    """Whether loading ``path`` with ``loader`` in a fresh process wrote the canary."""
    with tempfile.TemporaryDirectory() as cwd:
        subprocess.run(
            [sys.executable, __file__, loader, str(path.resolve())],
            cwd=cwd, capture_output=True, timeout=timeout, check=False,
        )  # fmt: skip
        return (Path(cwd) / "canary").exists()


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    try:
        _load(sys.argv[1], sys.argv[2])
        print("ok")
    except BaseException as exc:  # noqa: BLE001 - any refusal is the verdict
        print(f"refused: {type(exc).__name__}: {exc}"[:300])

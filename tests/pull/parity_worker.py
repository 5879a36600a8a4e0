"""The reference loaders, kept in one subprocess for the differential tests.

``python parity_worker.py LOADER...`` (``torch``, ``joblib``; ``pickle`` is always there)
imports the loaders named before it records anything, then reads one JSON request per line,
``{"mode": "torch"|"joblib"|"pickle", "path": ...}``, and answers one JSON line: whether
``torch.load(weights_only=True)`` / ``joblib.load`` / ``pickle.load`` accepted the file, every
global the unpickler looked up (the ``pickle.find_class`` audit event) and whatever was
imported or run (``import``/``exec``/``os.system``/``subprocess``/``posix_spawn``).
Imported by the tests, it is ``LoaderWorker``, the client that starts it.
"""

from __future__ import annotations

import importlib
import json
import pickle
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

EVENTS: list[list[str]] = []
WATCH = {"os.system", "subprocess.Popen", "exec", "compile", "import", "os.exec", "os.posix_spawn"}
RECORDING = [False]  # on only while a load runs


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not RECORDING[0]:
        return
    if event == "pickle.find_class":
        EVENTS.append(["find_class", f"{args[0]}.{args[1]}"])
    elif event in WATCH:
        EVENTS.append([event, repr(args)[:200]])


def _plain(path: str) -> object:
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - the reference loader, beside a canary


def _loaders(names: list[str]) -> dict[str, Callable[[str], object]]:
    """Each loader named, imported now, with what it imports lazily on a first load."""
    loaders: dict[str, Callable[[str], object]] = {"pickle": _plain}
    if "torch" in names:
        torch: object = importlib.import_module("torch")
        loaders["torch"] = lambda path: torch.load(path, weights_only=True)  # type: ignore[attr-defined]
    if "joblib" in names:
        joblib: object = importlib.import_module("joblib")
        importlib.import_module("numpy")  # joblib.load imports it lazily
        importlib.import_module("encodings.latin_1")  # the codec of a protocol-2 string
        loaders["joblib"] = joblib.load  # type: ignore[attr-defined]
    return loaders


def main() -> None:
    loaders = _loaders(sys.argv[1:])
    sys.addaudithook(_hook)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        request = json.loads(line)
        EVENTS.clear()
        ok = True
        RECORDING[0] = True
        try:
            loaders[request["mode"]](request["path"])
        except BaseException:  # noqa: BLE001 - any refusal is the verdict
            ok = False
        finally:
            RECORDING[0] = False
        print(json.dumps({"ok": ok, "events": EVENTS}), flush=True)


class LoaderWorker:
    """The reference loaders (``parity_worker.py``) in one subprocess whose working folder
    holds ``canary``: ``ask(mode, path)`` is its verdict on one file, ``close()`` fails if any
    file it loaded wrote the canary."""

    def __init__(self, canary: Path, *loaders: str) -> None:
        self.canary = canary
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *loaders], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=canary.parent,
        )  # fmt: skip

    def ask(self, mode: str, path: Path) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"mode": mode, "path": str(path)}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, object] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self, why: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        assert not self.canary.exists(), why


if __name__ == "__main__":
    main()

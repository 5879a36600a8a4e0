"""The reference loaders, kept in one subprocess for the differential fuzz tests.

Reads one JSON request per line: ``{"mode": "torch"|"pickle", "path": ...}``; answers one JSON
line: whether ``torch.load(weights_only=True)`` / ``pickle.load`` accepted the file and, for
``pickle``, every global CPython's unpickler looked up (the ``pickle.find_class`` audit event)
and whether anything was imported or run (``import``/``exec``/``os.system``/``subprocess``).
"""

from __future__ import annotations

import json
import pickle
import sys
import warnings

import torch

EVENTS: list[list[str]] = []
WATCH = {"os.system", "subprocess.Popen", "exec", "compile", "import", "open", "os.exec"}
RECORDING = [False]  # on only while a load runs


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not RECORDING[0]:
        return
    if event == "pickle.find_class":
        EVENTS.append(["find_class", f"{args[0]}.{args[1]}"])
    elif event in WATCH and event != "open":
        EVENTS.append([event, repr(args)[:200]])


def main() -> None:
    sys.addaudithook(_hook)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        request = json.loads(line)
        EVENTS.clear()
        ok = True
        RECORDING[0] = True
        try:
            if request["mode"] == "torch":
                torch.load(request["path"], weights_only=True)
            else:
                with open(request["path"], "rb") as f:
                    pickle.load(f)  # noqa: S301 - the reference loader, beside a canary
        except BaseException:  # noqa: BLE001 - any refusal is the verdict
            ok = False
        finally:
            RECORDING[0] = False
        print(json.dumps({"ok": ok, "events": EVENTS}), flush=True)


if __name__ == "__main__":
    main()

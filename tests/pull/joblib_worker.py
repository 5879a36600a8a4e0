"""joblib's own loader, kept in one subprocess for the joblib differential test.

Reads one JSON request per line, ``{"path": ..., "mode": "joblib" | "pickle"}``; answers one
JSON line: whether ``joblib.load`` (or plain ``pickle.load``, as DCP or a training script would
read the same file) accepted it and every global its unpickler looked up (the
``pickle.find_class`` audit event, raw module and name) or anything it imported or ran.
"""

from __future__ import annotations

import json
import pickle
import sys
import warnings

import joblib

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


def main() -> None:
    # imported before recording: joblib.load imports them lazily (numpy; the codec of a
    # protocol-2 string)
    import encodings.latin_1  # noqa: F401

    import numpy  # noqa: F401

    sys.addaudithook(_hook)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        request = json.loads(line)
        EVENTS.clear()
        ok = True
        RECORDING[0] = True
        try:
            if request.get("mode") == "pickle":
                with open(request["path"], "rb") as f:
                    pickle.load(f)  # noqa: S301 - a reference loader, beside a canary
            else:
                joblib.load(request["path"])  # the reference loader, beside a canary
        except BaseException:  # noqa: BLE001 - any refusal is the verdict
            ok = False
        finally:
            RECORDING[0] = False
        print(json.dumps({"ok": ok, "events": EVENTS}), flush=True)


if __name__ == "__main__":
    main()

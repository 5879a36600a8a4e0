#!/usr/bin/env python3
"""Differential fuzzer: rentcheck's verify against the real loaders, on structure-aware mutants.

    python benchmarks/verify_fuzz.py --minutes 30          # the long run (figures for a note)
    python benchmarks/verify_fuzz.py --cases 50 --seed 1   # what the CI test runs

Seeds are real files written by torch.save (zip and legacy), np.save (plain, big-endian and
object arrays), np.savez/savez_compressed, safetensors, pickle and joblib.dump. Each mutant
comes from one structure-aware change (pickle opcodes and globals, npy headers, zip records,
names, case and order, data before or after an archive, tar placement, safetensors headers) or
a byte-level one. Every mutant is judged by ``verify_file`` in this process; every mutant it
passes is loaded, in a throwaway worker process whose working folder holds the canary, by each
loader its name implies: ``torch.load`` with and without ``weights_only``, ``np.load(
allow_pickle=True)``, ``pickle.load``, ``joblib.load``, ``safetensors``. An audit hook records
every global the unpicklers look up and every exec/system/spawn.

The invariant: whenever verify passes a file, no loader looks up a global outside the allow-list
(torch's weights_only list and rentcheck's), nothing is executed, the canary is absent, and for
torch files ``torch.load(weights_only=True)`` loads it. A violation is a *disagreement*;
printed with the mutant saved under ``--out``. Files verify refuses although every loader is
fine are *false refusals*: counted, not violations.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

CANARY_CODE = "open('canary', 'w').write('ran')"
WATCH = ("exec", "compile", "os.system", "subprocess.Popen", "os.posix_spawn", "os.exec")
#: Loaders by suffix: the ones whose verdict the invariant covers.
LOADERS = {
    ".pt": ("torch", "torch-full", "pickle", "numpy"),
    ".bin": ("torch", "torch-full", "pickle", "numpy"),
    ".npy": ("numpy", "pickle"),
    ".npz": ("numpy",),
    ".pkl": ("pickle", "joblib", "numpy"),
    ".joblib": ("joblib", "pickle"),
    ".safetensors": ("safetensors", "torch"),
}


# -- the worker: the real loaders, in a process of their own -------------------------------
def _worker() -> None:
    import pickle
    import warnings

    import numpy as np
    import torch

    events: list[list[str]] = []
    recording = [False]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if not recording[0]:
            return
        if event == "pickle.find_class":
            events.append(["find_class", f"{args[0]}.{args[1]}"])
        elif event in WATCH or event.startswith("os.exec"):
            events.append([event, repr(args)[:120]])

    def load(mode: str, path: str) -> object:
        if mode == "torch":
            return torch.load(path, weights_only=True)
        if mode == "torch-full":
            return torch.load(path, weights_only=False)
        if mode == "numpy":
            out = np.load(path, allow_pickle=True)
            return [out[k] for k in out.files] if hasattr(out, "files") else out
        if mode == "joblib":
            import joblib

            return joblib.load(path)
        if mode == "safetensors":
            from safetensors.torch import load_file

            return load_file(path)
        with open(path, "rb") as f:
            return pickle.load(f)  # noqa: S301 - the reference loader, in a throwaway process

    try:
        import joblib  # noqa: F401 - imported before recording starts
        import safetensors.torch  # noqa: F401
    except ImportError:
        pass
    sys.addaudithook(hook)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        request = json.loads(line)
        events.clear()
        ok, why = True, ""
        recording[0] = True
        try:
            load(request["mode"], request["path"])
        except BaseException as exc:  # noqa: BLE001 - any refusal is the verdict
            ok, why = False, f"{type(exc).__name__}: {exc}"[:200]
        finally:
            recording[0] = False
        canary = os.path.exists("canary")
        if canary:
            os.remove("canary")
        print(json.dumps({"ok": ok, "why": why, "events": events, "canary": canary}), flush=True)


class Worker:
    """The worker process; restarted after a crash or a load that outlives ``timeout``."""

    def __init__(self, cwd: str, timeout: float = 60) -> None:
        self.cwd, self.timeout = cwd, timeout
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, cwd=self.cwd,
        )  # fmt: skip

    def ask(self, mode: str, path: Path) -> dict[str, object]:
        import select

        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"mode": mode, "path": str(path)}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            return {"ok": False, "why": "crashed or timed out", "events": [], "canary": False}
        answer: dict[str, object] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


# -- seeds: real writers' output -----------------------------------------------------------
def exec_pickle(protocol: int = 2) -> bytes:
    code = CANARY_CODE.encode()
    body = b"cbuiltins\nexec\n" + b"X" + len(code).to_bytes(4, "little") + code + b"\x85R."
    return (b"\x80" + bytes([protocol]) if protocol >= 2 else b"") + body


def seeds() -> dict[str, tuple[str, bytes]]:
    """name -> (suffix, bytes) of files the real writers produce."""
    import numpy as np
    import torch

    out: dict[str, tuple[str, bytes]] = {}
    state = {"w": torch.randn(4, 3), "b": torch.zeros(3), "h": torch.ones(5, dtype=torch.float16)}
    buf = io.BytesIO()
    torch.save(state, buf)
    out["torch-zip"] = (".pt", buf.getvalue())
    buf = io.BytesIO()
    torch.save(state, buf, _use_new_zipfile_serialization=False)
    out["torch-legacy"] = (".bin", buf.getvalue())
    for name, array in (
        ("npy", np.arange(12, dtype=np.float32).reshape(3, 4)),
        ("npy-big-endian", np.arange(6, dtype=">f8")),
        ("npy-object", np.array([1, "a", None], dtype=object)),
    ):
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=True)
        out[name] = (".npy", buf.getvalue())
    buf = io.BytesIO()
    np.savez(buf, x=np.ones(3, np.float32), y=np.arange(4))
    out["npz"] = (".npz", buf.getvalue())
    buf = io.BytesIO()
    np.savez_compressed(buf, x=np.ones(8, np.float64))
    out["npz-compressed"] = (".npz", buf.getvalue())
    try:
        from safetensors.torch import save

        out["safetensors"] = (".safetensors", save({"w": torch.randn(2, 3), "b": torch.ones(3)}))
    except ImportError:
        pass
    import pickle

    lightning = {
        "epoch": 3,
        "global_step": 30,
        "state_dict": {"layer.weight": torch.randn(3, 3), "layer.bias": torch.zeros(3)},
        "optimizer_states": [{"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(3)}},
                              "param_groups": [{"lr": 0.01, "params": [0]}]}],
        "lr_schedulers": [],
        "callbacks": {"ModelCheckpoint": {"best_model_score": torch.tensor(0.5)}},
    }  # fmt: skip
    buf = io.BytesIO()
    torch.save(lightning, buf)
    out["lightning"] = (".pt", buf.getvalue())
    plain = {"lr": 0.1, "steps": [1, 2, 3], "name": "run", "t": (1, 2)}
    out["pickle-p2"] = (".pkl", pickle.dumps(plain, protocol=2))
    out["pickle-p4"] = (".pkl", pickle.dumps(plain, protocol=4))
    try:
        import joblib

        buf = io.BytesIO()
        joblib.dump({"a": np.arange(5, dtype=np.float64), "n": 3}, buf)
        out["joblib"] = (".joblib", buf.getvalue())
    except ImportError:
        pass
    return out


# -- mutators: each takes (rng, bytes) and returns bytes ------------------------------------
GLOBALS = [
    b"builtins\nexec\n", b"builtins\neval\n", b"builtins\ngetattr\n", b"collections\nOrderedDict\n",
    b"torch._utils\n_rebuild_tensor_v2\n", b"torch\nFloatStorage\n", b"torch\nByteStorage\n",
    b"numpy.core.multiarray\n_reconstruct\n", b"builtins\nset\n", b"torch\nfloat32\n",
    b"builtins\nbytearray\n", b"torch._utils\n_rebuild_parameter\n",
]  # fmt: skip
SNIPPETS = [
    exec_pickle(0)[:-1] + b"0", b"N0", b"(t0", b"}0", b"\x88\x89\x86\x85R0", b"q\x00", b"h\x00",
    b"Nr\xff\xff\xff\x7f0", b"\x95\x10\x00\x00\x00\x00\x00\x00\x00", b"0", b"2", b"b", b"R",
    b"cbuiltins\nbytearray\nJ\x00\x00\x00\x10\x85R0",
]  # fmt: skip


def _pickle_spans(data: bytes) -> list[int]:
    """Opcode boundaries of the pickle at the start of ``data`` (empty if it is none)."""
    import pickletools
    import warnings

    spans: list[int] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for _, _, pos in pickletools.genops(io.BytesIO(data)):
                spans.append(pos or 0)
        except Exception:  # noqa: BLE001, S110 - the opcodes before the damage are enough
            pass
    return spans


def mutate_pickle(rng: random.Random, data: bytes) -> bytes:
    spans = _pickle_spans(data)
    if not spans:
        return mutate_bytes(rng, data)
    at = rng.choice(spans)
    choice = rng.randrange(4)
    if choice == 0:  # insert a snippet at an opcode boundary
        return data[:at] + rng.choice(SNIPPETS) + data[at:]
    if choice == 1:  # retarget a GLOBAL
        i = data.find(b"c", at)
        end = data.find(b"\n", data.find(b"\n", i + 1) + 1) if i >= 0 else -1
        if i < 0 or end < 0 or end - i > 80:
            return data[:at] + rng.choice(SNIPPETS) + data[at:]
        return data[: i + 1] + rng.choice(GLOBALS) + data[end + 1 :]
    if choice == 2:  # drop an opcode
        nxt = min([s for s in spans if s > at] or [len(data)])
        return data[:at] + data[nxt:]
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]  # retype an opcode


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(5)
    at = rng.randrange(max(1, len(data)))
    if kind == 0:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
    if kind == 1:
        return data[:at] + rng.randbytes(rng.randrange(1, 9)) + data[at:]
    if kind == 2:
        return data[:at] + data[at + rng.randrange(1, 9) :]
    if kind == 3:
        return data[:at]
    return data + rng.randbytes(rng.randrange(1, 64))


def _members(data: bytes) -> list[tuple[str, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return [(i.filename, z.read(i)) for i in z.infolist()]
    except Exception:  # noqa: BLE001 - not a zip this mutator can take apart
        return None


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as z:
        for name, payload in members:
            z.writestr(name, payload)
    return out.getvalue()


def mutate_zip(rng: random.Random, data: bytes) -> bytes:
    members = _members(data)
    if not members:
        return mutate_bytes(rng, data)
    choice = rng.randrange(9)
    k = rng.randrange(len(members))
    name, payload = members[k]
    if choice == 0:  # a member's name in another case, beside or instead of it
        twin = (name.upper() if name != name.upper() else name.lower(), payload)
        members.insert(k + rng.randrange(2), twin)
    elif choice == 1:  # order
        rng.shuffle(members)
    elif choice == 2:  # a member's bytes mutated as a pickle (data.pkl) or as bytes
        members[k] = (name, mutate_pickle(rng, payload))
    elif choice == 3:  # a member replaced by a hostile pickle, or a hostile .npy
        members[k] = (name, rng.choice([exec_pickle(), _hostile_npy()]))
    elif choice == 4:  # data before the archive (an end record first: np.load's second magic)
        return rng.choice([b"PK\x05\x06" + b"\0" * 18, rng.randbytes(30)]) + data
    elif choice == 5:  # data after the end record
        return data + rng.randbytes(rng.randrange(1, 40))
    elif choice == 6:  # a renamed member (constants.pkl makes it TorchScript to torch)
        prefix = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        members[k] = (prefix + rng.choice(["constants.pkl", "x.txt", "a.npy", "DATA.PKL"]), payload)
    elif choice == 7:
        return _zip(members, zipfile.ZIP_DEFLATED)
    else:  # an extra member: a hostile object array as .npy
        members.append((rng.choice(["evil.npy", "evil", "archive/data/9"]), _hostile_npy()))
    return _zip(members)


def _hostile_npy() -> bytes:
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return (
        b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + exec_pickle()
    )


DESCRS = ["'<f8'", "'f8'", "'float64'", "'d'", "'>f4'", "'<f2'", "'object'", "'O'", "'|O'",
          "'<i8'", "[('a', 'O')]", "'V8'", "'<f4'", "'float32'", "'(2,)<f4'"]  # fmt: skip


def mutate_npy(rng: random.Random, data: bytes) -> bytes:
    if not data.startswith(b"\x93NUMPY"):
        return mutate_bytes(rng, data)
    end = data.find(b"\n", 10) + 1
    header = data[10:end].decode("latin1")
    choice = rng.randrange(5)
    if choice == 0:
        i = header.find("'descr': ") + 9
        j = header.find(", 'fortran_order'")
        header = header[:i] + rng.choice(DESCRS) + header[j:]
    elif choice == 1:
        return data[:end] + exec_pickle(rng.choice([0, 2, 4]))  # the array's bytes a pickle
    elif choice == 2:
        return data[:6] + bytes([rng.choice([1, 2, 3, 4])]) + data[7:]
    elif choice == 3:
        return exec_pickle(rng.choice([0, 2])) + data[rng.randrange(0, 10) :]  # magic gone
    else:
        header = header.replace("'fortran_order': False", "'fortran_order': True")
    header = header.rstrip("\n").rstrip(" ")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    raw = header.encode("latin1")
    return data[:8] + len(raw).to_bytes(2, "little") + raw + data[end:]


def mutate_safetensors(rng: random.Random, data: bytes) -> bytes:
    n = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8 : 8 + n])
    except ValueError:
        return mutate_bytes(rng, data)
    body = data[8 + n :]
    names = [k for k in header if k != "__metadata__"]
    key = rng.choice(names)
    choice = rng.randrange(6)
    if choice == 0:
        header[key]["dtype"] = rng.choice(["F32", "F16", "BF16", "F64", "U8", "F31", "I64"])
    elif choice == 1:
        header[key]["shape"] = rng.choice([[2**40, 2**40], [2**64], [0], [-1], [3, 2]])
    elif choice == 2:
        a, b = header[key]["data_offsets"]
        header[key]["data_offsets"] = [a, b + rng.choice([-4, 4, 2**63])]
    elif choice == 3:
        header["__metadata__"] = rng.choice([{"a": "b"}, {"a": 1}, {"\ud800": "x"}])
    elif choice == 4:
        raw = json.dumps(header).replace('"' + key + '"', '"\\ud800"', 1).encode()
        return len(raw).to_bytes(8, "little") + raw + body
    else:
        return mutate_bytes(rng, data)
    raw = json.dumps(header).encode("utf-8", "surrogatepass")
    return len(raw).to_bytes(8, "little") + raw + body


def mutate_tar(rng: random.Random, data: bytes) -> bytes:
    """torch's legacy tar: ``storages`` wherever it sits, with or without PAX headers."""
    out = io.BytesIO()
    fmt = rng.choice([tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT])
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        members = [("README", b"x"), ("storages", rng.choice([exec_pickle(), data[:200]]))]
        if rng.random() < 0.5:
            members.reverse()
        for name, payload in members:
            info = tarfile.TarInfo(rng.choice(["", "./"]) + name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return out.getvalue()


MUTATORS: dict[str, list[Callable[[random.Random, bytes], bytes]]] = {
    "torch-zip": [mutate_zip, mutate_zip, mutate_bytes, mutate_tar],
    "torch-legacy": [mutate_pickle, mutate_pickle, mutate_bytes, mutate_tar],
    "lightning": [mutate_zip, mutate_zip, mutate_bytes],
    "npy": [mutate_npy, mutate_npy, mutate_bytes],
    "npy-big-endian": [mutate_npy, mutate_bytes],
    "npy-object": [mutate_npy, mutate_pickle, mutate_bytes],
    "npz": [mutate_zip, mutate_zip, mutate_bytes],
    "npz-compressed": [mutate_zip, mutate_bytes],
    "safetensors": [mutate_safetensors, mutate_safetensors, mutate_bytes],
    "pickle-p2": [mutate_pickle, mutate_pickle, mutate_bytes],
    "pickle-p4": [mutate_pickle, mutate_bytes],
    "joblib": [mutate_pickle, mutate_bytes],
}


# -- the run --------------------------------------------------------------------------------
def _allowed() -> frozenset[str]:
    from rentcheck.pull.formats.joblib_machine import JOBLIB_GLOBALS
    from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS

    names = set(ALLOWED_GLOBALS) | set(JOBLIB_GLOBALS)
    try:
        from torch._weights_only_unpickler import _get_allowed_globals

        names |= set(_get_allowed_globals())
    except ImportError:
        pass
    return frozenset(names)


#: Kinds verify reads as torch.load would (for which weights_only must agree with a pass);
#: torch.load hands a file to safetensors only by the ``.safetensors`` name, so safetensors
#: bytes under another name are a loader failure that runs nothing, not a disagreement.
TORCH_KINDS = ("torch-zip", "torch-legacy", "safetensors.safetensors")


def _violations(
    mode: str, answer: dict[str, object], allowed: frozenset[str], kind: str, suffix: str = ""
) -> list[str]:
    out = []
    if answer.get("canary"):
        out.append(f"{mode}: the canary was written")
    for what, name in answer.get("events", []):  # type: ignore[attr-defined]
        if what == "find_class" and name not in allowed:
            out.append(f"{mode}: looked up {name}")
        elif what not in ("find_class", "compile") and (what != "exec" or "<string>" in name):
            # compile: numpy's literal_eval of a header; exec of a module's code: an import
            out.append(f"{mode}: {what} {name}")
    torch_read = kind in TORCH_KINDS or f"{kind}{suffix}" in TORCH_KINDS
    if mode == "torch" and torch_read and not answer.get("ok"):
        out.append(f"torch weights_only refused what verify passed: {answer.get('why')}")
    return out


def _mutant(rng: random.Random, corpus: dict[str, tuple[str, bytes]]) -> tuple[str, bytes, str]:
    """(seed name, mutant bytes, mutator name): one to three steps of one mutator."""
    name = rng.choice(sorted(corpus))
    mutator = rng.choice(MUTATORS[name])
    mutant = corpus[name][1]
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            mutant = mutator(rng, mutant)
        except Exception:  # noqa: BLE001 - a mutator that cannot take this input apart
            mutant = mutate_bytes(rng, mutant)
    return name, mutant, mutator.__name__


def run(
    *, cases: int, minutes: float, seed: int, out: Path | None, quiet: bool = False
) -> dict[str, object]:
    """Fuzz ``cases`` mutants (or for ``minutes``); the summary: counts and disagreements."""
    import warnings

    from rentcheck.model import Severity
    from rentcheck.pull.filecheck import verify_file

    warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # a mutator's own zip
    rng = random.Random(seed)
    corpus = seeds()
    allowed = _allowed()
    stats: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    disagreements: list[dict[str, object]] = []
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else None
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        worker = Worker(tmp)
        try:
            while (deadline is None and n < cases) or (deadline and time.monotonic() < deadline):
                n += 1
                name, mutant, mutator = _mutant(rng, corpus)
                # one in five under another loader's name: dispatch by name and bytes
                suffix = corpus[name][0] if rng.random() > 0.2 else rng.choice(sorted(LOADERS))
                path = Path(tmp) / f"m{n % 64}{suffix}"
                path.write_bytes(mutant)
                verdict, findings = verify_file(path)
                passed = not any(f.severity >= Severity.ERROR for f in findings)
                stats[name]["cases"] += 1
                stats[name][f"passed-as-{verdict.kind}" if passed else "refused"] += 1
                if not passed:
                    continue
                bad = [
                    why
                    for mode in LOADERS[suffix]
                    for why in _violations(
                        mode, worker.ask(mode, path), allowed, verdict.kind, suffix
                    )
                ]
                if bad:
                    stats[name]["disagreements"] += 1
                    record = {"seed": name, "mutator": mutator, "kind": verdict.kind, "why": bad}
                    if out is not None:
                        out.mkdir(parents=True, exist_ok=True)
                        keep = out / f"disagreement-{len(disagreements)}{suffix}"
                        keep.write_bytes(mutant)
                        record["file"] = str(keep)
                    disagreements.append(record)
                    if not quiet:
                        print("DISAGREEMENT", json.dumps(record), flush=True)
        finally:
            worker.close()
    summary: dict[str, object] = {
        "cases": n,
        "minutes": round((time.monotonic() - started) / 60, 2),
        "per_format": {k: dict(v) for k, v in sorted(stats.items())},
        "disagreements": disagreements,
    }
    if not quiet:
        for fmt, counts in sorted(stats.items()):
            print(f"{fmt:16} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        print(f"{n} mutants in {summary['minutes']} min, {len(disagreements)} disagreements")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=0, help="run for this long instead")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--out", type=Path, default=None, help="keep disagreeing mutants here")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = parser.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    summary = run(cases=args.cases, minutes=args.minutes, seed=args.seed, out=args.out)
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1))
    return 1 if summary["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())

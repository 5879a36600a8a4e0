"""joblib files (joblib.dump, sklearn-style models): judged as joblib.load reads them.

Before this kind, an uncompressed joblib.dump of one float array was "hostile" (RC514 for
joblib's own NumpyArrayWrapper) and "damaged" (RC513: the array's bytes read as opcodes), and a
compressed one was only hashed, so an os.system payload in it passed."""

from __future__ import annotations

import datetime
import io
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import joblib
import numpy as np
import pytest

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file
from rentcheck.pull.formats.policy import FilePolicy, VerifyPolicy

COMPRESSIONS: dict[str, object] = {
    "plain.joblib": 0,
    "zlib.joblib": 3,
    "m.pkl.gz": 0,
    "m.pkl.bz2": 0,
    "m.pkl.xz": 0,
    "m.pkl.lzma": 0,
    "m.pkl.lz4": 0,
    "zlib9.pkl": ("zlib", 9),
}


def _codes(path: Path) -> list[str]:
    verdict, findings = verify_file(path)
    assert verdict.kind == "joblib", (path.name, verdict.kind)
    return sorted({f.code for f in findings})


def _errors(path: Path) -> list[str]:
    verdict, findings = verify_file(path)
    assert verdict.kind == "joblib", (path.name, verdict.kind)
    return sorted({f.code for f in findings if f.severity >= Severity.ERROR})


def _benign() -> dict[str, object]:
    structured = np.zeros(3, dtype=[("left", "<i8"), ("threshold", "<f8")])
    return {
        "floats": {
            "f2": np.ones(4, np.float16), "f4": np.ones((2, 3), np.float32),
            "f8": np.arange(10.0), "c8": np.ones(2, np.complex64), "c16": np.ones(2, np.complex128),
        },
        "ints": [np.arange(5, dtype=t) for t in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8")],
        "other": (np.array([True, False]), np.array(["ab", "cde"]), np.array([b"xy"]),
                  np.array(["2026-01-01"], dtype="datetime64[s]"), structured),
        "layouts": {"fortran": np.asfortranarray(np.ones((3, 4))), "scalar0d": np.array(2.5),
                    "empty": np.zeros((0, 3)), "view": np.arange(20.0)[::2]},
        "numpy_scalars": [np.float64(1.5), np.int64(3)],
        "objects": np.array([{"a": 1}, [1, 2], "s"], dtype=object),
        "plain": {"step": 7, "lr": 1e-3, "name": "run", "none": None},
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMPRESSIONS))
def test_benign_dumps_pass_at_every_compression(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    joblib.dump(_benign(), path, compress=COMPRESSIONS[name])
    assert _codes(path) == []
    verdict, _ = verify_file(path)
    assert verdict.tensors == 23  # every array seen (the two numpy scalars are not arrays)
    assert joblib.load(path)["floats"]["f8"][9] == 9.0  # our own file: joblib reads it back


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_benign_dumps_pass_at_every_protocol(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "m.joblib"
    joblib.dump(_benign(), path, protocol=protocol)
    assert _codes(path) == []


def test_big_endian_floats_are_a_skipped_scan_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "be.joblib"
    joblib.dump({"w": np.arange(4.0).astype(">f8")}, path)
    assert _codes(path) == ["RC517"] and _errors(path) == []


def test_nan_truncation_and_damage_are_caught(tmp_path: Path) -> None:
    w = np.ones((4, 4), np.float32)
    w[1, 2] = np.nan
    joblib.dump({"model": {"w": w, "b": np.zeros(4)}}, tmp_path / "nan.joblib", compress=3)
    _, findings = verify_file(tmp_path / "nan.joblib")
    assert [(f.code, f.details.get("tensor")) for f in findings] == [("RC516", "model.w")]
    for name, compress in (("cut.joblib", 0), ("zcut.joblib", 3), ("xcut.pkl.xz", 0)):
        path = tmp_path / name
        joblib.dump({"w": np.arange(1000.0)}, path, compress=compress)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 20])  # cut on the box
        assert _errors(path) == ["RC513"], name
        _, findings = verify_file(path)
        why = "cut short" if name.endswith(".xz") else "needs 8000 bytes"  # xz: its index
        assert any(why in f.message for f in findings), findings
    path = tmp_path / "flip.joblib"
    joblib.dump({"w": np.arange(1000.0)}, path, compress=3)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    assert _errors(path) == ["RC513"]
    data[len(data) // 2] ^= 0x40
    data[-1] ^= 0x01  # the zlib stream's Adler-32, read only after the pickle's STOP
    path.write_bytes(bytes(data))
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC513"] and "incorrect data check" in findings[0].message
    path = tmp_path / "trailing.joblib"
    joblib.dump({"w": np.arange(10.0)}, path)
    path.write_bytes(path.read_bytes() + b"\0" * 7)
    _, findings = verify_file(path)
    assert [f.message for f in findings] == [
        "7 bytes after the end of the joblib stream (joblib.dump writes none)"]  # fmt: skip


class _Call:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:
        return (exec, (self.code,))


class _System:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, (self.command,))


def _frame_trick(code: str) -> bytes:
    """A protocol-4 dump whose first frame runs past the wrapper's BUILD: joblib reads the array
    from after the frame, then runs the rest of the frame (the payload) as opcodes. A scanner
    that took the bytes after BUILD for the array would never see the payload."""
    buf = io.BytesIO()
    joblib.dump({"w": np.arange(10.0)}, buf, protocol=4)
    data = buf.getvalue()
    assert data[2:3] == b"\x95"
    size = int.from_bytes(data[3:11], "little")
    frame, rest = data[11 : 11 + size], data[11 + size :]
    assert frame.endswith(b"b")  # the wrapper's BUILD ends the frame
    text = code.encode()
    payload = b"cbuiltins\nexec\n\x8c" + bytes([len(text)]) + text + b"\x85R0"
    frame += payload
    return data[:3] + len(frame).to_bytes(8, "little") + frame + rest


def _hostile(tmp: Path, canary: Path) -> dict[str, Callable[[Path], None]]:
    code = f"open({str(canary)!r}, 'w').write('ran')"
    evil = _Call(code)

    def dump(obj: object, compress: object = 0) -> Callable[[Path], None]:
        return lambda path: joblib.dump(obj, path, compress=compress)

    def frame(path: Path) -> None:
        path.write_bytes(_frame_trick(code))

    def companion(path: Path) -> None:
        # joblib < 0.10's wrapper: joblib.load np.load()s the file it names, allow_pickle=True
        np.save(path.parent / "evil.npy", np.array([evil], dtype=object), allow_pickle=True)
        wrapper = joblib.numpy_pickle.NDArrayWrapper("evil.npy", np.ndarray)
        path.write_bytes(pickle.dumps({"w": wrapper}, protocol=2))

    return {
        "exec in the stream.joblib": dump({"w": np.arange(3.0), "e": evil}),
        "exec compressed.joblib": dump({"w": np.arange(3.0), "e": evil}, 3),
        "exec.pkl.xz": dump([evil]),
        "exec.pkl.bz2": dump([evil]),
        "exec.pkl.lz4": dump([evil]),
        "os.system.joblib": dump({"w": np.arange(3.0), "e": _System(f"touch {canary}")}, 3),
        "object array payload.joblib": dump({"o": np.array([evil], dtype=object)}),
        "object array payload compressed.joblib": dump({"o": np.array([1, evil], dtype=object)}, 3),
        "frame trick.joblib": frame,
        "companion wrapper.joblib": companion,
    }


def _load_all(paths: list[Path]) -> None:
    script = textwrap.dedent(f"""
        import joblib
        for path in {[str(p) for p in paths]!r}:
            try:
                joblib.load(path)
            except Exception:
                pass
    """)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)


def test_hostile_corpus_is_hostile_and_no_canary_appears(tmp_path: Path) -> None:
    """Each payload really runs under joblib.load (checked on a twin with another canary);
    rentcheck flags every one as hostile and runs none."""
    live, judged = tmp_path / "live", tmp_path / "judged"
    live.mkdir()
    judged.mkdir()
    for name, write in _hostile(live, live / "proof").items():
        write(live / name)
        _load_all([live / name])
        assert (live / "proof").exists(), f"{name}: the payload does not run under joblib.load"
        (live / "proof").unlink()
    canary = judged / "canary"
    for name, write in _hostile(judged, canary).items():
        path = judged / name
        write(path)
        verdict, findings = verify_file(path)
        codes = {f.code for f in findings}
        assert verdict.kind == "joblib", (name, verdict.kind)
        assert codes & {"RC514", "RC533"}, (name, findings)  # hostile, never only "damaged"
    assert not canary.exists()


def test_a_decompression_bomb_is_a_cap(tmp_path: Path) -> None:
    """300 MiB of zeros in an xz stream of ~45 KiB (6700:1): inflating stops at the cap."""
    path = tmp_path / "bomb.pkl.xz"
    zeros = np.broadcast_to(np.zeros(1, np.int8), (300 << 20,))  # written in 16 MiB pieces
    joblib.dump({"z": zeros}, path, compress=("xz", 1))
    assert path.stat().st_size < 100_000
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC533"]
    assert "decompression bomb" in findings[0].message


def test_start_up_imports_neither_joblib_nor_zstandard_nor_numpy(tmp_path: Path) -> None:
    path = tmp_path / "m.joblib"
    joblib.dump({"w": np.arange(10, dtype=np.int64)}, path, compress=3)
    code = textwrap.dedent(f"""
        import sys
        from rentcheck.pull import verify
        from rentcheck.pull.filecheck import verify_file
        heavy = ("numpy", "joblib", "zstandard", "torch", "lz4")
        verdict, findings = verify_file({str(path)!r})
        assert verdict.kind == "joblib" and findings == [], (verdict, findings)
        print(sorted(m for m in heavy if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr  # int arrays: not even numpy was needed


def test_an_object_array_state_shorter_than_its_shape_is_hostile(tmp_path: Path) -> None:
    """numpy 2.4's ndarray.__setstate__ copies prod(shape) items out of an object array's list
    without checking its length: joblib.load of this file segfaults (found by the differential
    test). joblib.dump never writes it; rentcheck calls it hostile."""
    path = tmp_path / "short.joblib"
    joblib.dump({"o": np.array([1, 2, 3], dtype=object)}, path)
    data = path.read_bytes()
    inner = data.index(b"\x80\x05", 2)  # the object array's own pickle (protocol 5)
    shape = data.index(b"K\x03\x85", inner)
    path.write_bytes(data[:shape] + b"K\xfd" + data[shape + 2 :])  # 253 elements, 3 items
    verdict, findings = verify_file(path)
    assert verdict.kind == "joblib"
    assert [f.code for f in findings] == ["RC514"]
    assert "reads past the list" in findings[0].message
    load = f"import joblib; joblib.load({str(path)!r})"
    crashed = subprocess.run([sys.executable, "-c", load], capture_output=True)
    assert crashed.returncode in (-11, 1)  # SIGSEGV with numpy 2.4.6; an error once fixed


def test_an_lz4_joblib_file_without_lz4_says_so(tmp_path: Path) -> None:
    """joblib reads lz4 only with the lz4 package; where rentcheck runs without it, the file is
    a named warning (RC537), not silence."""
    path = tmp_path / "model.joblib"
    joblib.dump({"w": np.arange(10.0)}, path, compress="lz4")
    assert _codes(path) == []  # with lz4: inflated and judged
    code = textwrap.dedent(f"""
        import sys
        sys.modules["lz4"] = sys.modules["lz4.frame"] = None  # an interpreter without lz4
        from rentcheck.pull.filecheck import verify_file
        verdict, findings = verify_file({str(path)!r})
        print(verdict.kind, [f.code for f in findings], findings[0].message)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.startswith("joblib ['RC537'] lz4-compressed joblib file not scanned"), (
        out.stdout + out.stderr
    )


class _NoTell(io.RawIOBase):
    """A write-only stream without tell(): joblib.dump then writes no alignment padding."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: object) -> int:
        view = memoryview(b)  # type: ignore[arg-type]
        self.data += view
        return len(view)


def _two_faced(code: str) -> bytes:
    """A joblib file whose uint8 array *is* a pickle: joblib.load reads data, pickle.load (DCP's
    .metadata reader, a training script's loader) runs the array's bytes as opcodes."""
    text = code.encode()
    payload = b"cbuiltins\nexec\n(X" + len(text).to_bytes(4, "little") + text + b"tR."
    out = _NoTell()
    joblib.dump({"w": np.frombuffer(payload, np.uint8)}, out, protocol=2)
    return bytes(out.data)


def test_a_file_that_reads_one_way_to_joblib_and_another_to_pickle_is_hostile(
    tmp_path: Path,
) -> None:
    proof, canary = tmp_path / "proof", tmp_path / "canary"
    live = tmp_path / "live.pkl"
    live.write_bytes(_two_faced(f"open({str(proof)!r}, 'w').write('ran')"))
    assert isinstance(joblib.load(live)["w"], np.ndarray) and not proof.exists()
    script = f"import pickle; pickle.load(open({str(live)!r}, 'rb'))"
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert proof.exists()  # pickle.load ran the "array"
    path = tmp_path / "model.pkl"
    path.write_bytes(_two_faced(f"open({str(canary)!r}, 'w').write('ran')"))
    verdict, findings = verify_file(path)
    assert verdict.kind == "joblib"
    assert [f.code for f in findings] == ["RC514"], findings
    assert "pickle.load would run the array's bytes" in findings[0].message
    assert not canary.exists()
    # an empty first array (no padding, no bytes) is no place where the two part: the next is
    out = _NoTell()
    text = f"open({str(canary)!r}, 'w').write('ran')".encode()
    payload = b"cbuiltins\nexec\n(X" + len(text).to_bytes(4, "little") + text + b"tR."
    value = {"e": np.zeros(0), "w": np.frombuffer(payload, np.uint8)}
    joblib.dump(value, out, protocol=2)
    path.write_bytes(bytes(out.data))
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC514"] and "array 2" in findings[0].message
    assert not canary.exists()


def test_a_pkl_whose_first_array_holds_objects_is_judged_for_pickle_load_too(
    tmp_path: Path,
) -> None:
    """joblib reads an object array's nested pickle with a fresh memo, plain pickle.load with
    the outer one: a real dump read by pickle.load looks up a name its shifted memo makes up
    (here 'NumpyArrayWrapper.dtype'); a crafted one could look up os.system the same way. A
    file of another name than *.joblib may be read by pickle.load, so it is held to both."""
    value = {"names": np.array(["a", "b"], dtype=object), "w": np.ones(3)}
    joblib.dump(value, tmp_path / "model.joblib")
    (tmp_path / "model.pkl").write_bytes((tmp_path / "model.joblib").read_bytes())
    assert _codes(tmp_path / "model.joblib") == []
    _, findings = verify_file(tmp_path / "model.pkl")
    assert [f.code for f in findings] == ["RC514"]
    assert "'NumpyArrayWrapper.dtype'" in findings[0].message
    load = f"import pickle; pickle.load(open({str(tmp_path / 'model.pkl')!r}, 'rb'))"
    out = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True)
    assert "No module named 'NumpyArrayWrapper'" in out.stderr  # what pickle.load really does
    joblib.dump({"w": np.ones(3), **value}, tmp_path / "floats_first.pkl")
    assert _codes(tmp_path / "floats_first.pkl") == []  # pickle.load stops at the padding byte


def test_a_model_class_is_allowed_per_file_or_as_a_known_full_pickle(tmp_path: Path) -> None:
    """An estimator pickles its own class: not on the allow-list (RC514) until the config
    names it, globally or for the files of one glob; a known full pickle is then one note."""
    path = tmp_path / "models" / "clf.joblib"
    path.parent.mkdir()
    joblib.dump({"fitted": datetime.date(2026, 1, 1), "coef": np.ones(3)}, path, compress=3)
    assert _errors(path) == ["RC514"]
    _, findings = verify_file(
        path, rel="models/clf.joblib", extra_allowed_globals=["datetime.date"]
    )
    assert findings == []
    policy = VerifyPolicy.build(
        files=[FilePolicy("models/*.joblib", ("datetime.date",), full_pickle=True)]
    )
    _, findings = verify_file(path, rel="models/clf.joblib", policy=policy)
    assert [f.code for f in findings] == ["RC534"]
    _, findings = verify_file(path, rel="other/clf.joblib", policy=policy)
    assert [f.code for f in findings] == ["RC514"]  # the policy is for its glob only


def test_joblibs_own_numpy_1_test_data_passes() -> None:
    # Files nobody here made: the dumps joblib ships to test its own loader, written by
    # joblib 0.10 under Python 3.3-3.5 and numpy 1.8-1.9. numpy < 2 names np.matrix by its
    # defining module (numpy.matrixlib.defmatrix.matrix); they were RC514 for that alone.
    data = Path(joblib.__file__).parent / "test" / "data"
    files = sorted(data.glob("joblib_0.10.0_*pickle_py3*"))
    if not files:
        pytest.skip("this joblib was installed without its test data")
    assert len(files) >= 6
    for path in files:
        joblib.load(path)  # joblib reads them (they are its own, trusted)
        verdict, findings = verify_file(path)
        assert verdict.kind == "joblib", path.name
        assert [f for f in findings if f.severity >= Severity.ERROR] == [], path.name

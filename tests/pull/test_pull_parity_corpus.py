"""Hostile and benign corpora: hostile files are hostile (never damage), no canary ever runs,
and everything torch.save writes is judged as torch.load(weights_only=True) judges it."""

from __future__ import annotations

import io
import os
import pickle
import random
import struct
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def _errors(path: Path) -> list[str]:
    _, findings = verify_file(path)
    return sorted({f.code for f in findings if f.severity >= Severity.ERROR})


def _torch_zip_with(data_pkl: bytes, name: str = "archive") -> bytes:
    """A torch.save archive whose data.pkl is replaced (records stay stored and valid)."""
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zin, zipfile.ZipFile(out, "w") as z:
        for rec in zin.namelist():
            z.writestr(rec, data_pkl if rec.endswith("data.pkl") else zin.read(rec))
    return out.getvalue()


def _canary(path: Path) -> str:
    return f"import os; open({str(path)!r}, 'w').write('ran')"


def _hostile(tmp: Path) -> dict[str, bytes]:
    canary = tmp / "canary"
    call = pickle.dumps(_Call(_canary(canary)), protocol=2)
    # memo confusion: CPython's MEMOIZE stores at len(memo), a hole left by PUT 5 included
    memo = (b"\x80\x04\x8c\x08builtins\x94r\x05\x00\x00\x000\x8c\x04exec\x940"
            b"h\x00h\x02\x93\x8c" + bytes([len(_canary(canary))]) + _canary(canary).encode()
            + b"\x85R.")  # fmt: skip
    legacy = io.BytesIO()
    for part in (0x1950A86A20F9469CFC6C, 1001, {}):
        pickle.dump(part, legacy, protocol=2)
    legacy.write(call)
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        info = tarfile.TarInfo("sys_info")
        info.size = len(call)
        t.addfile(info, io.BytesIO(call))
    amplify = b"\x80\x02]q\x00" + b"(" + b"h\x00" * 200_000 + b"t."  # one TUPLE, 200k refs
    return {
        "exec in data.pkl.pt": _torch_zip_with(call),
        "memo confusion.pt": _torch_zip_with(memo),
        "legacy object pickle.pth": legacy.getvalue(),
        "protocol-0 pickle.bin": b"cbuiltins\nexec\n(V" + _canary(canary).encode() + b"\ntR.",
        "no suffix": call,
        "dcp/.metadata": call,
        "checkpoint.pth.tar": _torch_zip_with(call),
        "legacy tar.tar": tar.getvalue(),
        "amplification.pkl": amplify,
    }


class _Call:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:
        return (exec, (self.code,))


def test_hostile_corpus_is_hostile_and_no_canary_appears(tmp_path: Path) -> None:
    corpus = _hostile(tmp_path)
    for name, data in corpus.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        codes = _errors(path)
        if name == "legacy tar.tar":  # torch refuses .tar under weights_only outright
            assert codes == ["RC530"], (name, codes)
        else:  # hostile or a cap (RC533), never only "damaged, re-pull"
            assert set(codes) & {"RC514", "RC533"}, (name, codes)
    for name in corpus:  # and the real loader, beside the canary, agrees
        script = textwrap.dedent(f"""
            import torch
            try:
                torch.load({str(tmp_path / name)!r}, weights_only=True)
            except Exception:
                pass
        """)
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert not (tmp_path / "canary").exists()


def _benign() -> dict[str, object]:
    lin = torch.nn.Linear(4, 3)
    shared = torch.arange(12.0)
    return {
        "state_dict": lin.state_dict(),
        "parameter": {"p": torch.nn.Parameter(torch.ones(3))},
        "sparse": {"s": torch.eye(3).to_sparse(), "csr": torch.eye(3).to_sparse_csr()},
        "quantized": {"q": torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)},
        "nested": {"a": {"b": [torch.ones(2), (torch.zeros(1), {"c": torch.ones(1)})]}},
        "meta": {"m": torch.empty(3, device="meta")},
        "shared": {"x": shared, "view": shared[2:6], "t": shared.view(3, 4).t()},
        "scalars": {"step": 3, "lr": 1e-3, "name": "run", "none": None, "ok": True},
    }


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_benign_corpus_matches_torch(tmp_path: Path, protocol: int) -> None:
    for name, obj in _benign().items():
        for legacy in (False, True):
            if legacy and name in ("meta", "sparse"):
                continue
            path = tmp_path / f"{name}-{protocol}-{int(legacy)}.pt"
            torch.save(obj, path, pickle_protocol=protocol,
                       _use_new_zipfile_serialization=not legacy)  # fmt: skip
            try:
                torch.load(path, weights_only=True)
                accepted = True
            except Exception:  # noqa: BLE001 - the reference verdict
                accepted = False
            codes = _errors(path)
            assert "RC514" not in codes and "RC533" not in codes, (path.name, codes)
            assert (codes == []) == accepted, (path.name, codes, accepted)
            assert codes in ([], ["RC530"]), (path.name, codes)


def test_bare_pickles_of_plain_data_pass_at_any_protocol(tmp_path: Path) -> None:
    data = {"a": [1, 2.5, "x", None, True], "b": (1, 2), "c": {3, 4}, "d": b"raw"}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        path = tmp_path / f"p{protocol}.pkl"
        path.write_bytes(pickle.dumps(data, protocol=protocol))
        assert _errors(path) == [], protocol


def test_eocd_choice_is_minizs(tmp_path: Path) -> None:
    """A second end-of-central-directory record hidden in the real one's comment: torch's
    reader (miniz) takes the last signature, so that is the directory judged; Python's zipfile
    takes it too but then shifts every offset by the 22-byte gap it leaves before the record,
    so the two readers disagree and the file is refused as unproven (RC538, issue 27: once
    this passed as readable by miniz alone)."""
    good = _torch_zip_with(pickle.dumps({"w": 1}, protocol=2))
    eocd = good.rindex(b"PK\x05\x06")
    fake = good[eocd : eocd + 20] + b"\xff\xff"  # claims a 65535-byte comment: ignored by miniz
    data = good[: eocd + 20] + struct.pack("<H", len(fake)) + fake
    path = tmp_path / "two-eocd.pt"
    path.write_bytes(data)
    torch.load(path, weights_only=True)  # torch reads it
    with pytest.raises(zipfile.BadZipFile), zipfile.ZipFile(path) as z:
        z.read(z.namelist()[0])  # zipfile reads elsewhere
    _, findings = verify_file(path)
    assert [f.code for f in findings] == ["RC538"]
    assert os.path.getsize(path) == len(data)


def test_torchscript_is_its_own_kind(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 2)), str(path))
    with pytest.raises(RuntimeError, match="TorchScript"):
        torch.load(path, weights_only=True)
    verdict, findings = verify_file(path)
    assert verdict.kind == "torchscript"
    # a refusal since issue 27 (it was a warning): torch.jit.load runs the archive's code
    assert [(f.code, f.severity) for f in findings] == [("RC532", Severity.ERROR)]
    assert "weights_only refuses it" in findings[0].message


def test_prose_without_a_suffix_is_not_taken_for_a_pickle(tmp_path: Path) -> None:
    for name, text in (("NOTES", b"Notes: the run diverged. (see below)\n" * 30),
                       ("LICENSE", b"(c) 2026 Someone\nAll rights reserved.\n")):  # fmt: skip
        (tmp_path / name).write_bytes(text)
        verdict, findings = verify_file(tmp_path / name)
        assert (verdict.kind, findings) == ("data", []), name


def test_binary_data_that_begins_like_a_pickle_is_data(tmp_path: Path) -> None:
    # 0x80 then a byte <= 5 is a PROTO opcode, and 6 in 65,536 random files begin so: raw int16
    # samples, images, compressed blobs. pickle.load of one fails on the next bytes before it
    # has imported or called anything, so unless the file is named as a pickle it is data.
    rng = random.Random(5)  # noqa: S311 - test data
    for proto in range(6):
        body = bytes([0x80, proto, 0x00]) + rng.randbytes(4093)
        (tmp_path / f"sample_{proto}.png").write_bytes(body)
        with pytest.raises(pickle.UnpicklingError):
            pickle.loads(body)  # noqa: S301 - it has no import: it fails at byte 3
        verdict, findings = verify_file(tmp_path / f"sample_{proto}.png")
        assert (verdict.kind, findings) == ("data", []), proto
    # ... but a stream that reaches an import before its garbage is still a pickle, whatever
    # its name: pickle.load has run os.system by the time it meets the bad byte.
    hostile = b"\x80\x02cos\nsystem\n(S'true'\ntR\xff" + rng.randbytes(200)
    (tmp_path / "sample_x.png").write_bytes(hostile)
    verdict, findings = verify_file(tmp_path / "sample_x.png")
    assert verdict.kind == "pickle" and "RC514" in {f.code for f in findings}
    # named as a checkpoint, garbage after PROTO is damage, as before
    (tmp_path / "model.pt").write_bytes(bytes([0x80, 2, 0x00]) + rng.randbytes(600))
    verdict, findings = verify_file(tmp_path / "model.pt")
    assert "RC513" in {f.code for f in findings}
    # a file shorter than the sniffed head: running out at its end is failing too
    (tmp_path / "tiny.dat").write_bytes(bytes([0x80, 3]) + b"(]")
    verdict, findings = verify_file(tmp_path / "tiny.dat")
    assert (verdict.kind, findings) == ("data", [])


def test_tar_headers_are_recognised_as_tarfile_reads_them() -> None:
    # torch.load tries tarfile first; its header check accepts a base-256 or signed/underscored
    # octal checksum as well as the usual one, and a flipped byte anywhere breaks it.
    from rentcheck.pull.formats.dispatch import _is_tar

    rng = random.Random(3)  # noqa: S311 - test data
    seen = set()
    for i in range(400):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as t:
            info = tarfile.TarInfo("sys_info" if i % 2 else "x" * (1 + i % 90))
            info.size = 3
            t.addfile(info, io.BytesIO(b"abc"))
        head = bytearray(out.getvalue()[:512])
        total = 256 + sum(head[:148]) + sum(head[156:])
        form = i % 4
        if form == 1:
            head[rng.randrange(512)] ^= 1 << rng.randrange(8)
        elif form == 2:
            head[148:156] = b"\x80" + total.to_bytes(7, "big")
        elif form == 3:
            head[148:156] = (b" +%o\0" % total).ljust(8, b"\0")
        try:
            tarfile.TarInfo.frombuf(bytes(head), "utf-8", "surrogateescape")
            accepted = True
        except tarfile.HeaderError:
            accepted = False
        assert _is_tar(bytes(head)) == accepted, (form, bytes(head[148:156]))
        seen.add(accepted)
    assert seen == {True, False}

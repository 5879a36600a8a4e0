"""What the differential fuzzer (benchmarks/verify_fuzz.py) found, each pinned with the real
reader as the oracle: verify passed these files and the real loader refused them (or ran one).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from oracle import exec_pickle, ran_payload

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def _errors(path: Path) -> set[str]:
    return {f.code for f in verify_file(path)[1] if f.severity >= Severity.ERROR}


def _torch_records() -> dict[str, bytes]:
    buf = io.BytesIO()
    torch.save({"w": torch.ones(3)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        return {n: z.read(n) for n in z.namelist()}


def _rezip(records: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in records.items():
            z.writestr(name, data)
    return out.getvalue()


def test_a_safetensors_header_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save

    data = save({"w": torch.ones(2)})
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    header["__metadata__"] = {"note": "x"}
    raw = json.dumps(header).replace('"x"', '"\\ud800"').encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + n :])
    with pytest.raises(Exception, match=r"hex escape|surrogate|JSON"):
        load_file(path)
    assert "RC511" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize("order", [b"", b"LITTLE", b"little\n", b"middle"])
def test_a_byteorder_record_torch_does_not_know_is_refused(tmp_path: Path, order: bytes) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("/byteorder"))
    records[key] = order
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(ValueError, match="endianness"):
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


def test_a_local_header_whose_extra_field_runs_into_the_next_record_is_refused(
    tmp_path: Path,
) -> None:
    data = bytearray(_rezip(_torch_records()))
    at = data.index(b"PK\x03\x04", data.index(b"data/0") - 60)  # data/0's local header
    data[at + 28 : at + 30] = (0xD238).to_bytes(2, "little")
    path = tmp_path / "m.pt"
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


def test_a_torch_zip_record_with_the_npy_magic_is_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([None], dtype=object), allow_pickle=True)
    npy = buf.getvalue()
    hostile = npy[: npy.index(b"\n") + 1] + exec_pickle()
    records = _torch_records()
    prefix = next(iter(records)).split("/", 1)[0]
    records[f"{prefix}/data/9"] = hostile  # a record torch never reads, np.load does
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    torch.load(path, weights_only=True)  # torch ignores the extra record
    assert ran_payload(path, "numpy")  # np.load opens any zip as an .npz
    assert "RC538" in _errors(path), verify_file(path)[1]


def test_a_text_record_that_is_not_ascii_is_refused(tmp_path: Path) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("serialization_id"))
    records[key] = b"\xff\xfe" + records[key]
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(UnicodeDecodeError):
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize(
    ("record", "value"),
    [("version", b""), ("version", b"11"), ("version", b"0"), (".storage_alignment", b"x")],
)
def test_a_number_record_torch_cannot_parse_is_refused(
    tmp_path: Path, record: str, value: bytes
) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("/" + record))
    records[key] = value
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whatever its type
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


def _stored_blocks(data: bytes, *, first: int, padding: int) -> bytes:
    """Raw deflate: ``first`` bytes in one stored block, ``padding`` empty stored blocks (no
    output), then the rest in a final stored block."""

    def block(chunk: bytes, final: bool) -> bytes:
        n = len(chunk)
        return bytes([final]) + n.to_bytes(2, "little") + (n ^ 0xFFFF).to_bytes(2, "little") + chunk

    empty = block(b"", False)
    return block(data[:first], False) + empty * padding + block(data[first:], True)


def _one_member_zip(name: str, data: bytes, compressed: bytes) -> bytes:
    import struct
    import zlib

    crc = zlib.crc32(data)
    raw = name.encode()
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc,
                        len(compressed), len(data), len(raw), 0) + raw  # fmt: skip
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc,
                          len(compressed), len(data), len(raw), 0, 0, 0, 0, 0, 0) + raw  # fmt: skip
    cd_off = len(local) + len(compressed)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), cd_off, 0)
    return local + compressed + central + end


def test_an_npz_member_whose_first_inflated_piece_is_shorter_than_the_magic(
    tmp_path: Path,
) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([None], dtype=object), allow_pickle=True)
    npy = buf.getvalue()
    hostile = npy[: npy.index(b"\n") + 1] + exec_pickle()
    # 3 bytes of the magic, then 1 MiB of empty blocks: the first piece inflated is b"\x93NU"
    compressed = _stored_blocks(hostile, first=3, padding=(1 << 20) // 5 + 10)
    path = tmp_path / "a.npz"
    path.write_bytes(_one_member_zip("a.npy", hostile, compressed))
    assert ran_payload(path, "numpy")
    assert "RC514" in _errors(path), verify_file(path)[1]


def test_a_rebuild_given_an_int_for_its_size_is_one_torch_refuses(tmp_path: Path) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("data.pkl"))
    assert b"K\x00K\x03\x85" in records[key]
    records[key] = records[key].replace(b"K\x00K\x03\x85", b"K\x00K\x03", 1)  # size 3, not (3,)
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whatever its type
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


def test_a_torchscript_archive_with_an_npy_magic_record_is_refused(tmp_path: Path) -> None:
    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        records = {n: z.read(n) for n in z.namelist()}
    prefix = next(iter(records)).split("/", 1)[0]
    npy = io.BytesIO()
    np.save(npy, np.array([None], dtype=object), allow_pickle=True)
    records[f"{prefix}/extra.npy"] = npy.getvalue()[: npy.getvalue().index(b"\n") + 1] + (
        exec_pickle()
    )
    path = tmp_path / "scripted.pt"
    path.write_bytes(_rezip(records))
    assert ran_payload(path, "numpy")
    assert "RC538" in _errors(path), verify_file(path)[1]


def test_a_rebuild_helper_given_the_wrong_number_of_arguments_is_one_torch_refuses(
    tmp_path: Path,
) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("data.pkl"))
    pkl = b"\x80\x02}q\x00X\x01\x00\x00\x00wctorch._utils\n_rebuild_parameter\n(N\x89N\x89N\x89tRs."
    records[key] = pkl
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(Exception, match="positional argument"):
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


def test_a_constants_pkl_deeper_than_torch_looks_is_no_torchscript(tmp_path: Path) -> None:
    """torch calls an archive TorchScript only for a record named exactly constants.pkl under
    its top folder; '.data/constants.pkl' leaves data.pkl to the ordinary unpickler."""
    records = _torch_records()
    prefix = next(iter(records)).split("/", 1)[0]
    records[f"{prefix}/data.pkl"] = exec_pickle()
    records[f"{prefix}/.data/constants.pkl"] = b"0"
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    assert ran_payload(path, "torch-full")
    verdict, findings = verify_file(path)
    assert verdict.kind == "torch-zip"
    assert "RC514" in {f.code for f in findings}, findings


def test_a_record_marked_encrypted_is_refused(tmp_path: Path) -> None:
    data = bytearray(_rezip(_torch_records()))
    at = data.index(b"PK\x03\x04", data.index(b"/version") - 60)
    data[at + 6] |= 1  # the local header's general purpose flags: encrypted
    cd = data.index(b"PK\x01\x02", data.rindex(b"PK\x01\x02", 0, data.rindex(b"/version")) - 1)
    data[cd + 8] |= 1  # and the central directory's
    path = tmp_path / "m.pt"
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="encryption"):
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


def test_a_v1_rebuild_whose_view_runs_past_its_storage_is_refused(tmp_path: Path) -> None:
    records = _torch_records()
    key = next(n for n in records if n.endswith("data.pkl"))
    records[key] = (
        b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x01ctorch._utils\n_rebuild_tensor\nq\x02"
        b"((X\x07\x00\x00\x00storageq\x03ctorch\nFloatStorage\nq\x04X\x01\x00\x00\x000q\x05"
        b"X\x03\x00\x00\x00cpuq\x06K\x03tq\x07QK\x00K\x09\x85q\x08K\x01\x85q\ttq\x0cRq\rs."
    )  # a 9-element view of a 3-element storage
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize(
    "shape", [[2**40, 2**40, 0], [0, 2**64], [0, 2**70], [2**62, 4, 0]], ids=str
)
def test_a_safetensors_shape_the_reader_overflows_on_is_refused(
    tmp_path: Path, shape: list[int]
) -> None:
    from safetensors.torch import load_file

    header = {
        "a": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]},
        "b": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path = tmp_path / "s.safetensors"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * 8)
    with pytest.raises(Exception, match=r"overflow|invalid"):
        load_file(path)
    assert "RC511" in _errors(path), verify_file(path)[1]


def test_a_record_with_the_dos_directory_attribute_is_refused(tmp_path: Path) -> None:
    """miniz calls an entry whose external attributes carry 0x10 a directory and extracts
    nothing from it; Python's zipfile reads its bytes (found by the fuzzer: case-24.pt)."""
    import struct

    data = bytearray(_rezip(_torch_records()))
    at = data.index(b"PK\x01\x02")
    while True:  # the central entry of the version record
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_len].endswith(b"/version"):
            break
        at = data.index(b"PK\x01\x02", at + 46)
    data[at + 38] |= 0x10
    path = tmp_path / "m.pt"
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as z:
        assert z.read(next(n for n in z.namelist() if n.endswith("/version")))  # zipfile reads it
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whatever its type
        torch.load(path, weights_only=True)
    assert "RC512" in _errors(path), verify_file(path)[1]


def test_a_view_whose_size_holds_a_string_is_refused(tmp_path: Path) -> None:
    """tensor.set_ fails on a size that is not a tuple of ints (found by the fuzzer in a
    legacy file: case-23.bin); torch.save writes an int and two tuples of ints."""
    records = _torch_records()
    key = next(n for n in records if n.endswith("data.pkl"))
    assert b"K\x00K\x03\x85" in records[key]
    records[key] = records[key].replace(b"K\x00K\x03\x85", b"K\x00X\x01\x00\x00\x00a\x85", 1)
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(TypeError):
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize("key", [b"]\x85", b"]\x85\x85", b"N)\x86"], ids=["list", "nested", "ok"])
def test_a_dict_key_holding_a_list_at_any_depth_is_one_torch_refuses(
    tmp_path: Path, key: bytes
) -> None:
    """Hashing a tuple hashes its items: ``([],)`` as a key raises in torch's SETITEMS (found
    by the fuzzer in a legacy file: case-25.bin, a rebuild's arguments as a key)."""
    records = _torch_records()
    name = next(n for n in records if n.endswith("data.pkl"))
    assert b"X\x01\x00\x00\x00w" in records[name]
    records[name] = records[name].replace(b"X\x01\x00\x00\x00w", key, 1)
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    if key == b"N)\x86":  # (None, ()) hashes: torch loads it, verify passes it
        torch.load(path, weights_only=True)
        assert not _errors(path), verify_file(path)[1]
        return
    with pytest.raises(TypeError, match="unhashable"):
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (b"cbuiltins\nbytearray\n(K\x01K\x02K\x03K\x04tR", "at most 3 arguments"),
        (b"cbuiltins\nbytearray\nX\x01\x00\x00\x00a\x85R", "without an encoding"),
        (b"cbuiltins\ncomplex\nN\x85R", "must be a string or a number"),
    ],
    ids=["bytearray-arity", "bytearray-str", "complex-none"],
)
def test_an_allowed_builtin_called_as_it_never_is_pickled_is_refused(
    tmp_path: Path, call: bytes, error: str
) -> None:
    """torch's weights_only unpickler really calls an allow-listed builtin; these calls raise
    (the first found by the fuzzer: case-26.pt)."""
    records = _torch_records()
    name = next(n for n in records if n.endswith("data.pkl"))
    records[name] = b"\x80\x02}X\x01\x00\x00\x00k" + call + b"s."
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(TypeError, match=error):
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


@pytest.mark.parametrize(
    "target",
    [
        b"torch\nFloatStorage\n",
        b"torch\nBFloat16Storage\n",
        b"torch\nTensor\n",
        b"torch.nn.parameter\nParameter\n",
        b"torch\nUntypedStorage\n",
        b"torch.storage\nUntypedStorage\n",
    ],
    ids=lambda t: t.decode().replace("\n", " ").strip(),
)
def test_a_rebuild_retargeted_to_an_allowed_class_torch_never_calls_is_refused(
    tmp_path: Path, target: bytes
) -> None:
    """torch's allow-list holds the typed storages as placeholders that cannot be called,
    and classes torch.save never calls; ``torch.UntypedStorage`` is no allowed spelling
    (only ``torch.storage.UntypedStorage``)."""
    records = _torch_records()
    name = next(n for n in records if n.endswith("data.pkl"))
    records[name] = records[name].replace(b"torch._utils\n_rebuild_tensor_v2\n", target, 1)
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whatever its type
        torch.load(path, weights_only=True)
    assert _errors(path) & {"RC530", "RC514"}, verify_file(path)[1]


@pytest.mark.parametrize(
    ("call", "op"),
    [
        (b"cbuiltins\ncomplex\nX\x03\x00\x00\x00cpu\x85", b"R"),
        (b"ccollections\nOrderedDict\nK\x02\x85\x85", b"R"),
        (b"ctorch._utils\n_rebuild_sparse_tensor\nG?\xf8\x00\x00\x00\x00\x00\x00K\x02\x86", b"R"),
        (b"ctorch\ndevice\nK\x01\x85", b"R"),
        (b"ctorch.serialization\n_get_layout\nX\x03\x00\x00\x00cpu\x85", b"R"),
        (b"ctorch\nTensor\n}\x85", b"\x81"),
        (b"ctorch.storage\nUntypedStorage\nN\x85", b"\x81"),
        (b"ctorch.sparse\nFloatTensor\n]\x85", b"\x81"),
    ],
    ids=[
        "complex-str",
        "odict-ints",
        "sparse-float",
        "device-index",
        "layout-cpu",
        "newobj-tensor",
        "newobj-storage",
        "newobj-sparse",
    ],
)
def test_a_call_of_an_allowed_global_torch_save_never_writes_is_refused(
    tmp_path: Path, call: bytes, op: bytes
) -> None:
    """What a sweep of every allow-listed global, called by REDUCE and NEWOBJ with eight
    argument shapes, found verify passing and weights_only refusing: verify now accepts only
    the calls pickle and torch.save write (complex of numbers, OrderedDict() or of a mapping,
    a layout by its name, a device by its name, no NEWOBJ of torch's own classes)."""
    records = _torch_records()
    name = next(n for n in records if n.endswith("data.pkl"))
    records[name] = b"\x80\x02}X\x01\x00\x00\x00k" + call + op + b"s."
    path = tmp_path / "m.pt"
    path.write_bytes(_rezip(records))
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whatever its type
        torch.load(path, weights_only=True)
    assert "RC530" in _errors(path), verify_file(path)[1]


def test_a_legacy_key_list_without_its_appends_is_refused(tmp_path: Path) -> None:
    """The storage keys pickle is run, not its strings collected: without APPENDS it is the
    last key, a str torch iterates by character (found by the fuzzer: case-28.bin)."""
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2), "b": torch.zeros(3)}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    keys_at = data.rindex(b"\x80\x02]")  # the fifth pickle: the storage keys
    end = data.index(b"e.", keys_at)
    path = tmp_path / "m.pt"
    path.write_bytes(data[:end] + data[end + 1 :])  # drop APPENDS
    with pytest.raises(AssertionError, match="not found in deserialized_objects"):
        torch.load(path, weights_only=True)
    assert "RC513" in _errors(path), verify_file(path)[1]

"""Pick the validator for a file from its first bytes, the way the loader that reads it would.

torch.load decides by content: a zip by its first four bytes (then TorchScript when the
archive holds ``constants.pkl``), else a legacy ``.tar`` (refused under ``weights_only``), else
the legacy pickle sequence; only ``.safetensors`` goes by its suffix. So a ``.pth.tar``, a
file without a suffix or a ``.bin`` that begins with a protocol-0 pickle is judged by what it
is, not by what it is called. Text suffixes (``.json``/``.yaml``) are parsed as text unless
the bytes are a binary pickle.

Fail closed, by loader: a file whose name implies a loader that unpickles (torch.load,
``np.load(allow_pickle=True)``, pickle/joblib.load: ``LOADER_SUFFIXES``) is "data" only when
that loader provably runs nothing on it (its first opcodes fail before any import or call);
anything else verify cannot read the way that loader will (a pickle hidden under a numpy
name, a zip found by its end record, a tar torch.load would unpack) is RC538, never data.
"""

from __future__ import annotations

import io
import pickletools
import tarfile
import warnings
from collections.abc import Iterable
from typing import NamedTuple

from rentcheck.pull.formats.base import Issue, PRead, StreamValidator, TensorInfo
from rentcheck.pull.formats.joblib_file import JoblibValidator, joblib_codec
from rentcheck.pull.formats.legacy import PickleStreamValidator, starts_with_legacy_magic
from rentcheck.pull.formats.npy import NPY_MAGIC, NpyValidator
from rentcheck.pull.formats.npz import NpzValidator, looks_like_npz
from rentcheck.pull.formats.pickle_reach import first_pickle_is_inert, runs_nothing
from rentcheck.pull.formats.pickle_safety import GENOPS_ERRORS
from rentcheck.pull.formats.safetensors import MAX_HEADER_BYTES, SafetensorsValidator
from rentcheck.pull.formats.text import TextValidator
from rentcheck.pull.formats.torchzip import ACCEPT_HINT, TorchZipValidator
from rentcheck.pull.formats.zipdir import zip_member_names
from rentcheck.pull.rules import (
    TORCH_WILL_REFUSE,
    UNKNOWN_CHECKPOINT_FORMAT,
    UNPROVEN_LOAD_SAFETY,
)

__all__ = ["CHECKPOINT_SUFFIXES", "LOADER_SUFFIXES", "Choice", "choose_validator", "suffix_of"]

#: Names torch.save output usually carries: bytes that are no known format are a finding here
#: (anywhere else they are data). ``.bin`` is left out: plenty of ``.bin`` files are not torch.
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".pkl", ".pickle")
_MUST_BE_CHECKPOINT = (".pt", ".pth", ".ckpt", ".pkl", ".pickle")
_PICKLE_SUFFIXES = (".pkl", ".pickle")
#: Names joblib.load is plausibly pointed at (joblib.dump(model, "m.sav") is common): its
#: unpickler is CPython's pure-Python one, which resolves more than pickle.load's.
_JOBLIB_NAMED = (*_PICKLE_SUFFIXES, ".joblib", ".jbl", ".pk", ".p", ".sav")
_NUMPY_SUFFIXES = (".npy", ".npz")
#: Names a loader that unpickles is plausibly pointed at: torch.load (``.pt``... and the
#: ``.th`` of older code; a ``.tar`` is judged by its members), np.load(allow_pickle=True),
#: pickle.load and joblib.load.
LOADER_SUFFIXES = (
    *CHECKPOINT_SUFFIXES, *_NUMPY_SUFFIXES, ".joblib", ".jbl", ".pk", ".p", ".sav", ".th"
)  # fmt: skip
#: The members of a legacy torch tar checkpoint: torch.load extracts these.
_TORCH_TAR_MEMBERS = frozenset(("storages", "tensors", "pickle", "sys_info"))
_TAR_MEMBER_BUDGET = 4096  # a torch tar holds 3-4 members; any real tar we judge stays below
_RUNS_NOTHING_WINDOW = 64 * 1024
_TEXT = {".json": "json", ".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"}


def suffix_of(rel: str) -> str:
    dot = rel.rfind(".")
    return rel[dot:].lower() if dot > rel.rfind("/") else ""


class Choice(NamedTuple):  # one per file: a tuple costs a fraction of a dataclass
    # safetensors | torch-zip | torchscript | torch-legacy | torch-tar | pickle | npy | npz |
    # joblib | json | jsonl | yaml | unknown | unproven | data
    kind: str
    validator: StreamValidator | None


class _Verdict:
    """A file whose verdict is settled by its first bytes (hashed like every file)."""

    tensors: tuple[TensorInfo, ...] = ()

    def __init__(self, issue: Issue) -> None:
        self._issue = issue

    def feed(self, chunk: memoryview) -> None:
        pass

    def finish(self) -> list[Issue]:
        return [self._issue]


def looks_like_pickle(head: bytes, *, size: int, named: bool = True) -> bool:
    """Whether the file begins with a pickle: protocol 2+ by its PROTO opcode, protocol 0/1 by
    its first opcodes disassembling up to STOP (or, in a longer file, to the end of ``head``).

    ``named``: the file carries a checkpoint suffix; without one a protocol-0/1 stream must
    end exactly at the end of the file, so prose that happens to parse is not taken for one.
    """
    if len(head) >= 2 and head[0] == 0x80 and head[1] <= 5:
        return named or not first_pickle_is_inert(head, size, python=False)
    if not head or (head[:1] not in b"(]}c)NIS" and not named):
        return False  # (pickle.load runs whatever opcode comes first)
    count = 0
    stream = io.BytesIO(head)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            for op, _, pos in pickletools.genops(stream):
                count += 1
                if op.name == "STOP":
                    return named or (pos or 0) + 1 == size
        except GENOPS_ERRORS:
            # cut off by the end of ``head`` (not by a bad byte) in a longer file
            ran_out = stream.tell() >= len(head) - 64
            return named and count >= 4 and size > len(head) and ran_out
    return False  # pragma: no cover - genops raises before running out


def _is_tar(head: bytes) -> bool:
    """A tar header at byte 0: torch.load tries ``tarfile.open`` before the pickles."""
    if len(head) < 512:
        return False
    stored = _tar_number(head[148:156])
    if stored is None:
        return False
    block = head[:148] + b" " * 8 + head[156:512]
    unsigned = sum(block)
    high = len(block) - len(block.translate(None, _HIGH_BYTES))
    return stored in (unsigned, unsigned - 256 * high)  # old tars summed signed chars


_HIGH_BYTES = bytes(range(128, 256))


def _tar_number(field: bytes) -> int | None:
    """A header number field as tarfile's ``nti`` reads it: base-256 after a 0x80/0xFF byte,
    else octal text up to the first NUL (``int(..., 8)``: blanks, a sign, underscores)."""
    if field[0] in (0x80, 0xFF):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[0] == 0xFF else value
    text = field.split(b"\0", 1)[0]
    if text.translate(None, _OCTAL_TEXT):  # a byte int() refuses: no exception raised
        return None
    try:
        return int(text.decode("ascii").strip() or "0", 8)
    except ValueError:
        return None


#: The bytes ``int(text.strip(), 8)`` can accept: octal digits, sign, underscore, ASCII blanks.
_OCTAL_TEXT = b"01234567+-_ \t\n\v\f\r\x1c\x1d\x1e\x1f"


class _Unknown:
    """A file named like a checkpoint whose bytes are no checkpoint format."""

    tensors: tuple[TensorInfo, ...] = ()

    def __init__(self, head: bytes, size: int) -> None:
        self._head, self._size = head, size

    def feed(self, chunk: memoryview) -> None:
        pass

    def finish(self) -> list[Issue]:
        head = self._head
        if not self._size:
            what = "the file is empty"
        elif head.startswith(b"version https://git-lfs"):
            what = "it is a git-lfs pointer, not the object"
        elif head.lstrip()[:1] == b"<":
            what = "it looks like an HTML/XML page"
        elif len(head) > 262 and head[257:262] == b"ustar":
            what = "it is a tar archive (pre-1.6 torch format, not supported)"
        else:
            what = f"it starts with {head[:8]!r}"
        return [Issue(UNKNOWN_CHECKPOINT_FORMAT, f"neither a torch zip nor a pickle: {what}")]


def _unproven(what: str) -> _Verdict:
    return _Verdict(Issue(UNPROVEN_LOAD_SAFETY, f"{what}; {ACCEPT_HINT}"))


def _loader_runs_nothing(rel: str, head: bytes, pread: PRead, size: int) -> bool:
    """Whether ``pickle.load`` of this file provably fails before it imports or calls anything:
    its opcodes (up to 64 KiB of them) hit a bad byte or the end of the file first. genops
    decodes each argument at least as strictly as CPython's unpickler, so where it fails the
    real one has failed too (or earlier: it also checks the stack)."""
    if not head:
        return True
    window = head if size <= len(head) else pread(0, min(size, _RUNS_NOTHING_WINDOW))
    python = suffix_of(rel) in _JOBLIB_NAMED
    return runs_nothing(window, complete=len(window) >= size, size=size, python=python)


class _TarFile(io.RawIOBase):
    """A read-only file over ``pread`` for tarfile (which seeks over member data)."""

    def __init__(self, pread: PRead, size: int) -> None:
        self._pread, self._size, self._pos = pread, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, self._size)[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), max(0, self._size - self._pos))
        data = self._pread(self._pos, want) if want else b""
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _tar_verdict(head: bytes, pread: PRead, size: int, suffix: str) -> Choice:
    """A tar: torch.load (``weights_only=False``) extracts ``storages``/``tensors``/``pickle``
    wherever they sit, after PAX headers or other members; ``weights_only=True`` refuses any
    tar. So a tar named like a checkpoint, or holding such a member anywhere, is torch's."""
    first = head[:100].split(b"\0", 1)[0]
    if suffix in LOADER_SUFFIXES or first in (b"sys_info", b"./sys_info", b"storages", b"pickle"):
        return Choice("torch-tar", _torch_refuses_tar())
    try:
        with tarfile.open(fileobj=_TarFile(pread, size), mode="r:") as tar:
            for count, member in enumerate(tar):
                name = member.name.rstrip("/").rsplit("/", 1)[-1]
                if name in _TORCH_TAR_MEMBERS:
                    return Choice("torch-tar", _torch_refuses_tar())
                if count >= _TAR_MEMBER_BUDGET:
                    what = f"a tar of more than {_TAR_MEMBER_BUDGET} members was not walked whole"
                    return Choice("unproven", _unproven(what))
    except (tarfile.TarError, OSError, ValueError, EOFError):
        pass  # torch.load would fall back to reading it as pickles: see the caller
    return Choice("data", None)


def _looks_like_safetensors(head: bytes, size: int) -> bool:
    return len(head) >= 9 and head[8:9] == b"{" and 8 < int.from_bytes(head[:8], "little") < size


def _torch_refuses_tar() -> _Verdict:
    return _Verdict(
        Issue(
            TORCH_WILL_REFUSE,
            "torch will refuse to load this with weights_only=True: it is a legacy .tar "
            "checkpoint (torch < 0.4), whose pickles only a full unpickler reads",
        )
    )


def choose_validator(
    rel: str,
    size: int,
    head: bytes,
    pread: PRead,
    *,
    extra_allowed: Iterable[str] = (),
    max_header: int = MAX_HEADER_BYTES,
    full_pickle: bool = False,
) -> Choice:
    """The validator for ``rel``; ``head`` is the start of the file (at least 512 bytes if any).

    ``full_pickle``: a per-file policy names the file a known full pickle (its globals become
    one note, torch's refusal is expected).
    """
    suffix = suffix_of(rel)
    allowed = tuple(extra_allowed)
    if suffix == ".distcp":  # byte ranges DCP reads at the offsets .metadata names, not a file
        return Choice("data", None)
    if suffix == ".safetensors" or (suffix not in _TEXT and _looks_like_safetensors(head, size)):
        return Choice("safetensors", SafetensorsValidator(size, max_header=max_header))
    if head.startswith(b"PK\x03\x04"):
        names = zip_member_names(pread, size)
        # torch's _is_torchscript_zip: a record named exactly "constants.pkl" below the top
        # folder (".data/constants.pkl" is not one: torch unpickles data.pkl as usual)
        if names is not None and any(n.partition("/")[2] == "constants.pkl" for n in names):
            return Choice("torchscript", TorchZipValidator(size, pread, torchscript=True))
        if (
            names is None
            or any(n.endswith("data.pkl") for n in names)
            or (suffix in CHECKPOINT_SUFFIXES)
        ):
            zipped = TorchZipValidator(size, pread, extra_allowed=allowed, full_pickle=full_pickle)
            return Choice("torch-zip", zipped)
        if looks_like_npz(names) or suffix in LOADER_SUFFIXES:
            # np.load reads any zip as an .npz, each member as an array by its magic
            return Choice("npz", NpzValidator(size, pread, extra_allowed=allowed))
        return Choice("data", None)
    if head.startswith(b"PK\x05\x06") and suffix in LOADER_SUFFIXES:
        # np.load opens it with zipfile, which finds the directory from the end
        if size <= 22 + 0xFFFF and zip_member_names(pread, size) == []:
            return Choice("data", None)  # an empty archive: nothing in it to load
        what = "a zip np.load would find by its end record, with data before it"
        return Choice("unproven", _unproven(what))
    if head.startswith(NPY_MAGIC):
        return Choice("npy", NpyValidator(size, extra_allowed=allowed))
    codec = joblib_codec(
        rel,
        head,
        size,
        pread,
        # a compressed file joblib.load would inflate and unpickle: joblib's unless pickle.load
        # of what it holds provably runs nothing (joblib.dump(x, "m.gz") is named like a log)
        lambda data, named, whole: (
            looks_like_pickle(data, size=len(data) + (not whole), named=named)
            or not runs_nothing(data, complete=whole)
        ),
    )
    if codec is not None:  # joblib.load: compressed by content, arrays after their wrappers
        joblib_file = JoblibValidator(
            size, pread, codec, rel=rel, extra_allowed=allowed, full_pickle=full_pickle
        )
        return Choice("joblib", joblib_file)
    binary_pickle = head[:1] == b"\x80"
    if suffix in _TEXT and not binary_pickle:
        keep = rel.endswith(".index.json")
        return Choice(_TEXT[suffix], TextValidator(size, _TEXT[suffix], keep=keep))
    if _is_tar(head):
        tar_choice = _tar_verdict(head, pread, size, suffix)
        if tar_choice.kind != "data" or suffix not in LOADER_SUFFIXES:
            return tar_choice
    if looks_like_pickle(head, size=size, named=suffix in LOADER_SUFFIXES):
        joblib_named = suffix in _JOBLIB_NAMED
        if suffix not in _MUST_BE_CHECKPOINT and first_pickle_is_inert(
            head, size, python=joblib_named
        ):
            # its first opcodes parse, but pickle.load raises on them before it resolves any
            # name (a stack underflow at byte 0), or reads a plain value that is not torch's
            # magic number (then junk): loading it runs nothing, e.g. a random token shard
            # named .bin. The same judgement whatever the path (pool, inline, thread).
            return Choice("data", None)
        torch_named = suffix in _MUST_BE_CHECKPOINT and suffix not in _PICKLE_SUFFIXES
        if not torch_named and not starts_with_legacy_magic(head):
            # read with pickle.load (DCP .metadata, joblib, .pkl), not torch.load
            validator = PickleStreamValidator(
                size, legacy=False, extra_allowed=allowed, full_pickle=full_pickle
            )
            return Choice("pickle", validator)
        validator = PickleStreamValidator(
            size, legacy=True, extra_allowed=allowed, full_pickle=full_pickle
        )
        return Choice("torch-legacy", validator)
    if suffix in LOADER_SUFFIXES and not _loader_runs_nothing(rel, head, pread, size):
        what = "its loader would unpickle it, but its first opcodes are no pickle verify reads"
        return Choice("unproven", _unproven(what))
    if suffix in _MUST_BE_CHECKPOINT:
        return Choice("unknown", _Unknown(head[:512], size))
    return Choice("data", None)

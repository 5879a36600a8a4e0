"""Pick the validator for a file from its name and its first bytes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rentcheck.pull.formats.base import Issue, PRead, StreamValidator, TensorInfo
from rentcheck.pull.formats.legacy import PickleStreamValidator
from rentcheck.pull.formats.safetensors import MAX_HEADER_BYTES, SafetensorsValidator
from rentcheck.pull.formats.text import TextValidator
from rentcheck.pull.formats.torchzip import TorchZipValidator
from rentcheck.pull.rules import UNKNOWN_CHECKPOINT_FORMAT

__all__ = ["CHECKPOINT_SUFFIXES", "Choice", "choose_validator", "suffix_of"]

#: Names torch.save output usually carries. ``.bin`` is only validated when it looks like torch.
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".pkl", ".pickle")
_PICKLE_SUFFIXES = (".pkl", ".pickle")
_TEXT = {".json": "json", ".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"}


def suffix_of(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1].lower()
    return name[name.rfind(".") :] if "." in name else ""


@dataclass(frozen=True)
class Choice:
    # safetensors | torch-zip | torch-legacy | pickle | json | jsonl | yaml | unknown | data
    kind: str
    validator: StreamValidator | None


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


def choose_validator(
    rel: str,
    size: int,
    head: bytes,
    pread: PRead,
    *,
    extra_allowed: Iterable[str] = (),
    max_header: int = MAX_HEADER_BYTES,
) -> Choice:
    """The validator for ``rel``; ``head`` is the start of the file (at least 512 bytes if any)."""
    suffix = suffix_of(rel)
    allowed = tuple(extra_allowed)
    if suffix == ".safetensors":
        return Choice("safetensors", SafetensorsValidator(size, max_header=max_header))
    if suffix in _TEXT:
        keep = rel.endswith(".safetensors.index.json")
        return Choice(_TEXT[suffix], TextValidator(size, _TEXT[suffix], keep=keep))
    if suffix not in CHECKPOINT_SUFFIXES:
        return Choice("data", None)
    if head.startswith(b"PK\x03\x04"):
        return Choice("torch-zip", TorchZipValidator(size, pread, extra_allowed=allowed))
    if suffix in _PICKLE_SUFFIXES:
        return Choice("pickle", PickleStreamValidator(size, legacy=False, extra_allowed=allowed))
    if head[:1] == b"\x80":
        return Choice(
            "torch-legacy", PickleStreamValidator(size, legacy=True, extra_allowed=allowed)
        )
    if suffix == ".bin":
        return Choice("data", None)
    return Choice("unknown", _Unknown(head[:512], size))

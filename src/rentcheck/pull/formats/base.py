"""Types shared by the incremental validators."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Issue", "PRead", "StreamValidator", "TensorInfo"]

#: ``pread(offset, length) -> bytes``: random access into the file being validated, used only
#: for small bounded reads (a zip's central directory at the end of the file).
PRead = Callable[[int, int], bytes]


@dataclass(frozen=True)
class Issue:
    """One problem a validator found; ``code`` is an RC5xx rule code."""

    code: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TensorInfo:
    """What a validator learned about one tensor (or one torch storage)."""

    name: str
    dtype: str
    nbytes: int


class StreamValidator(Protocol):
    """Fed every byte of a file, in order, exactly once; then asked for its verdict."""

    def feed(self, chunk: memoryview) -> None:
        """Consume the next chunk. Must not keep a reference to ``chunk`` after returning."""

    def finish(self) -> list[Issue]:
        """Called once after the last chunk; returns every problem found."""

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        """Tensors the file declares (empty for formats without tensors)."""

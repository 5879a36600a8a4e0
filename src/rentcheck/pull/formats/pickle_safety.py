"""Static pickle analysis: a symbolic pickle machine that never builds a real object.

``scan_pickle`` walks the opcodes with ``pickletools.genops`` and keeps a model of the stack and
memo in which values are only strings, ints, tuples, globals and opaque containers. That is
enough to (1) resolve every ``GLOBAL``/``STACK_GLOBAL`` exactly (no walk-back heuristics that
memo tricks can fool), (2) check that every ``REDUCE``/``NEWOBJ``/``BUILD`` applies to an
allow-listed global, (3) prove the stream well-formed up to ``STOP``, and (4) recover torch's
persistent ids (storage key, type, element count) with the tensor names that use them.
Nothing is imported or executed; ``pickle.load`` is never called.
"""

from __future__ import annotations

import io
import pickletools
import struct
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rentcheck.pull.formats.finite import FLOAT_SPECS
from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS, normalize_global
from rentcheck.pull.formats.pickle_machine import (
    LEAF,
    OPS,
    TORCH_OPS,
    Global,
    Handler,
    Machine,
    Malformed,
    Obj,
    StorageRef,
    kind,
)

__all__ = ["GENOPS_ERRORS", "PickleReport", "StorageRef", "report_of", "scan_pickle", "step"]

MAX_OPS = 3_000_000  # about 80k tensors; ~35 bytes retained per opcode at worst
#: Wall-clock budget of one pickle (checked every 4096 opcodes): a real data.pkl takes
#: milliseconds to a few seconds; this only stops a scan the other caps somehow let run on.
MAX_SCAN_SECONDS = 60.0
GENOPS_ERRORS = (ValueError, struct.error, OverflowError, EOFError, IndexError, MemoryError)


@dataclass(frozen=True)
class PickleReport:
    end: int  # stream offset just after STOP (or where analysis stopped)
    protocol: int | None
    globals: tuple[str, ...]
    unsafe: tuple[str, ...]  # each names the offending global or opcode
    malformed: str | None
    storages: Mapping[str, StorageRef]
    bad_views: tuple[str, ...]  # tensors whose view exceeds their storage
    refused: tuple[str, ...] = ()  # what torch's weights_only unpickler would refuse (harmless)
    capped: str | None = None  # the work cap that stopped the analysis, if one did
    ops: int = 0  # opcodes analysed
    tensor_paths: frozenset[str] = frozenset()  # dotted path of every tensor in the object
    persid_sizes: frozenset[int] = frozenset()  # items of the persistent ids (zip: 5, legacy: 6)
    #: storage key -> the byte ranges its tensors' views cover (only storages that are read
    #: through views alone; any other storage is scanned whole)
    views: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)


def _unsafe_opcode(m: Machine, name: str, arg: object) -> None:
    """INST, OBJ, EXT*, PERSID, buffers: flagged, then modelled so the scan can go on."""
    if name == "INST" and isinstance(arg, str):
        module, _, attr = arg.partition(" ")
        qual = normalize_global(module, attr)
        m.globals.setdefault(qual, None)
        if qual in m.allowed:  # CPython calls an allowed class: harmless; torch refuses INST
            m.refuse(f"opcode INST calls '{qual}'")
        else:
            m.flag(f"opcode INST calls '{qual}' (not needed by a state dict)")
        m.pop_mark()
        m.push(Obj(qual, qual))
    elif name == "OBJ":
        items = m.pop_mark()
        first = items[0] if items else None
        if isinstance(first, Global) and first.name in m.allowed:
            m.refuse(f"opcode OBJ calls '{first.name}'")
            m.push(Obj(first.name, first.name))
            return
        what = kind(first) if items else "nothing"
        m.flag(f"opcode OBJ calls {what} (not needed by a state dict)")
        m.push(Obj())
    else:
        m.flag(f"opcode {name} (not needed by a state dict)")
        if name in ("EXT1", "EXT2", "EXT4", "PERSID", "NEXT_BUFFER"):
            m.push(LEAF)


def step(m: Machine, name: str, arg: object, handlers: Mapping[str, Handler] = OPS) -> bool:
    """Apply one opcode to ``m`` as CPython's unpickler would; True at ``STOP``."""
    if name not in TORCH_OPS:
        m.refuse(f"opcode {name}")
    if name == "STOP":
        # As CPython and torch: STOP returns the top of the stack (above the last MARK);
        # whatever lies below it is dropped, unused.
        m.stack.append(m.pop())
        return True
    handler = handlers.get(name)
    if handler is not None:
        handler(m, name, arg)
    else:
        _unsafe_opcode(m, name, arg)
    return False


def scan_pickle(
    data: bytes | memoryview,
    *,
    start: int = 0,
    extra_allowed: Iterable[str] = (),
    max_ops: int = MAX_OPS,
) -> PickleReport:
    """Analyse the pickle that starts at ``data[start]``; never raises on bad input."""
    m = Machine(ALLOWED_GLOBALS | frozenset(extra_allowed))
    stream = io.BytesIO(data)
    stream.seek(start)
    end, malformed, count = start, None, 0
    deadline = time.monotonic() + MAX_SCAN_SECONDS
    ops = pickletools.genops(stream)
    # A crafted STRING opcode makes pickletools warn about its escapes; the scan judges the
    # bytes, the user's terminal need not hear about them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            for count in range(1, max_ops + 2):
                try:
                    opcode, arg, pos = next(ops)
                except StopIteration:  # pragma: no cover - genops raises before that
                    raise Malformed("no STOP opcode") from None
                except GENOPS_ERRORS as exc:
                    end = max(end, stream.tell())
                    raise Malformed(
                        f"{str(exc) or type(exc).__name__} (after byte {end})"
                    ) from None
                end = (pos or 0) + 1
                if not count & 0xFFF and time.monotonic() > deadline:
                    m.capped = f"analysis took more than {MAX_SCAN_SECONDS:g} s"
                    raise Malformed(m.capped)
                if count > max_ops:
                    m.capped = f"more than {max_ops} opcodes"
                    raise Malformed(f"analysis stopped after {max_ops} opcodes")
                if step(m, opcode.name, arg):
                    break
        except Malformed as exc:
            malformed = str(exc) if "(after byte" in str(exc) else f"{exc} (at byte {end - 1})"
    return report_of(m, end=end, malformed=malformed, ops=count)


def report_of(m: Machine, *, end: int, malformed: str | None, ops: int) -> PickleReport:
    """What the machine found, as a report (after ``STOP`` or where the analysis stopped)."""
    storages = _finish_storages(m)
    paths = frozenset(p for value in m.stack[-1:] for p, _ in m.refs_of(value) if p)
    if m.capped is None and malformed and "stack deeper than" in malformed:
        m.capped = malformed.split(" (at byte")[0]
    return PickleReport(
        end=end,
        protocol=m.protocol,
        globals=tuple(m.globals),
        unsafe=tuple(m.unsafe),
        malformed=malformed,
        storages=storages,
        bad_views=tuple(dict.fromkeys(m.bad_views)),
        refused=tuple(m.refused),
        capped=m.capped,
        ops=ops,
        tensor_paths=paths,
        persid_sizes=frozenset(m.persid_sizes),
        views=_views(m, storages),
    )


def _views(
    m: Machine, storages: Mapping[str, StorageRef]
) -> dict[str, tuple[tuple[int, int], ...]]:
    """The byte ranges of each float storage its views cover, where only views read it."""
    out = {}
    for key, ref in storages.items():
        if ref.scan_dtype is not None:
            spans = m.views.spans(key, FLOAT_SPECS[ref.scan_dtype].itemsize)
            if spans is not None:
                out[key] = spans
    return out


def _finish_storages(m: Machine) -> dict[str, StorageRef]:
    names: dict[str, str] = {}
    for value in reversed(m.stack[-1:]):
        for path, key in m.refs_of(value):
            names.setdefault(key, path)
    out: dict[str, StorageRef] = {}
    for key, ref in m.storages.items():
        scan = ref.scan_dtype
        if key in m.dtypes and (
            m.dtypes[key][1] is not None or ref.storage_type.endswith("UntypedStorage")
        ):
            scan = m.dtypes[key][1]  # the dtype a v3 rebuild gives the tensor wins
        out[key] = StorageRef(
            ref.key,
            ref.storage_type,
            ref.numel,
            ref.location,
            ref.itemsize,
            scan,
            names.get(key, ""),
        )
    return out

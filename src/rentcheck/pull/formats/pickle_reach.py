"""What pickle.load of a stream meets first, proved without running it: an opcode that
imports or calls, a failure, or STOP. Verify uses it to call a file "data" only when its
loader provably runs nothing (fail closed: "not proved" is a refusal, RC538)."""

from __future__ import annotations

import copyreg
import io
import pickletools
import warnings

from rentcheck.pull.formats.pickle_safety import GENOPS_ERRORS

__all__ = ["fails_before_any_import", "first_reach", "runs_nothing"]


#: The opcodes through which pickle.load reaches code: each resolves a name to an object
#: (find_class, the copyreg extension registry, persistent_load). REDUCE, BUILD, NEWOBJ and OBJ
#: call or set what is on the stack; before any of these ran, the stack holds plain data (None,
#: numbers, strings, bytes, lists, tuples, dicts, sets), none of it callable, so they raise
#: (TypeError, "isn't a type object") and run nothing.
_RESOLVING = frozenset(("GLOBAL", "STACK_GLOBAL", "INST", "PERSID", "BINPERSID"))
_EXTENSIONS = frozenset(("EXT1", "EXT2", "EXT4"))
_IMPORTING = (b"c", b"i")  # GLOBAL, INST


def fails_before_any_import(head: bytes, size: int) -> bool:
    """Whether pickle.load of a stream beginning with ``head`` raises inside it before any
    opcode that imports or calls: binary data that happens to begin with a PROTO opcode (6 in
    65,536 random files do), which nobody can load and which runs nothing. ``head`` is the
    whole file when ``size`` is no longer: then running out is failing too."""
    return first_reach(head, complete=size <= len(head), size=size) == "fails"


def first_reach(window: bytes, *, complete: bool, size: int | None = None) -> str:
    """What pickle.load of a stream beginning with ``window`` meets first: ``"reaches"`` (an
    opcode that imports or calls, with what it needs on the stack), ``"fails"`` (it raises
    first: a bad byte, a stack underflow, a missing MARK or memo entry, or the end of a
    ``complete`` window), ``"stops"`` (STOP: a value built of plain data, nothing ran), or
    ``"unproved"`` (the window ran out first).

    The stack is modelled as pickletools' ``dis`` models it; CPython's unpickler and joblib's
    (pure Python) are stricter still (a MARK fences the stack below it), so where this says
    it fails, they have failed too (tested against the real unpickler with random streams).
    ``size``: the whole stream's length, when the window is its beginning only (an argument
    longer than what is left of the stream fails the load)."""
    stream = io.BytesIO(window)
    nxt = 0  # where the next opcode starts
    stack: list[object] = []  # pickletools stack types; ``markobject`` for each MARK
    memo: set[object] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            for op, arg, _ in pickletools.genops(stream):
                if op.name == "STOP":
                    return "stops" if stack else "fails"
                if not _stack_effect(op, arg, stack, memo):
                    return "fails"  # raises before the opcode does anything
                if op.name in _RESOLVING:
                    return "reaches"
                if op.name in _EXTENSIONS:
                    # an unregistered code raises ValueError; a registered one (none in a
                    # plain interpreter) resolves to a class
                    registered = getattr(copyreg, "_inverted_registry", {})
                    return "reaches" if arg in registered else "fails"
                nxt = stream.tell()
        except GENOPS_ERRORS:
            if window[nxt : nxt + 1] in _IMPORTING:
                # genops decodes a GLOBAL/INST name as ASCII, CPython as UTF-8: CPython may
                # import what genops refused to read, unless it cannot decode it either
                return _names_decode(window[nxt + 1 :])
            # failed on a bad byte, or ran out at the end of the whole file: nothing ran; ran
            # out at the end of the window of a longer file: not proved, unless the argument
            # it was reading is longer than the rest of the file
            if complete or stream.tell() < len(window) - 64:
                return "fails"
            return "fails" if _runs_past(window, nxt, size) else "unproved"
    return "unproved"  # pragma: no cover - genops raises before running out


# pickletools' codes for an argument whose length is the little-endian integer before it
_COUNTED = {  # code -> (bytes of the length, signed)
    pickletools.TAKEN_FROM_ARGUMENT1: (1, False),
    pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
    pickletools.TAKEN_FROM_ARGUMENT4U: (4, False),
    pickletools.TAKEN_FROM_ARGUMENT8U: (8, False),
}
_BY_CODE = {op.code.encode("latin-1"): op for op in pickletools.opcodes}


def _runs_past(window: bytes, at: int, size: int | None) -> bool:
    """Whether the opcode at ``at`` declares an argument longer than the rest of the stream
    (a random length in a BINBYTES8 at the start of a data file): the load fails there."""
    op = _BY_CODE.get(window[at : at + 1])
    counted = _COUNTED.get(op.arg.n) if op is not None and op.arg is not None else None
    if counted is None or size is None or len(window) < at + 1 + counted[0]:
        return False
    width, signed = counted
    length = int.from_bytes(window[at + 1 : at + 1 + width], "little", signed=signed)
    return at + 1 + width + length > size


def _names_decode(rest: bytes) -> str:
    """A GLOBAL/INST genops could not read: CPython reads two lines and decodes each as
    UTF-8 before it imports anything; a name that is no UTF-8 fails there."""
    module, _, tail = rest.partition(b"\n")
    name, found, _ = tail.partition(b"\n")
    try:
        module.decode("utf-8")
        if found:
            name.decode("utf-8")
    except UnicodeDecodeError:
        return "fails"
    return "reaches"


_MEMO_PUT = ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE")
_MEMO_GET = ("GET", "BINGET", "LONG_BINGET")


def _stack_effect(
    op: pickletools.OpcodeInfo, arg: object, stack: list[object], memo: set[object]
) -> bool:
    """Apply one opcode's stack effect; False when the unpickler raises on it (too few items,
    no MARK, a memo key never put, a PUT with nothing to put)."""
    before, after = op.stack_before, op.stack_after
    mark = pickletools.markobject
    if mark in before or (before and before[-1] is pickletools.stackslice):
        if mark not in stack:
            return False
        while stack.pop() is not mark:
            pass
        count = before.index(mark) if mark in before else 0
    else:
        count = len(before)
    if count > len(stack) or mark in stack[len(stack) - count :]:
        return False
    if op.name in _MEMO_PUT:
        if not stack or stack[-1] is mark:
            return False
        memo.add(len(memo) if op.name == "MEMOIZE" else arg)
    elif op.name in _MEMO_GET and arg not in memo:
        return False
    del stack[len(stack) - count :]
    stack.extend(after)
    return True


def runs_nothing(window: bytes, *, complete: bool, size: int | None = None) -> bool:
    """Whether pickle.load of a stream beginning with ``window`` provably runs nothing (it
    fails or stops first); ``complete``: the window is the whole stream."""
    return first_reach(window, complete=complete, size=size) in ("fails", "stops")

"""What pickle.load of a stream meets first, proved without running it: an opcode that
imports or calls, a failure, or STOP. Verify uses it to call a file "data" only when its
loader provably runs nothing (fail closed: "not proved" is a refusal, RC538)."""

from __future__ import annotations

import copyreg
import io
import pickletools
import warnings

from rentcheck.pull.formats.pickle_safety import GENOPS_ERRORS

__all__ = ["first_pickle_is_inert", "first_reach", "runs_nothing"]


#: The opcodes through which pickle.load reaches code: each resolves a name to an object
#: (find_class, the copyreg extension registry, persistent_load). REDUCE, BUILD, NEWOBJ and OBJ
#: call or set what is on the stack; before any of these ran, the stack holds plain data (None,
#: numbers, strings, bytes, lists, tuples, dicts, sets), none of it callable, so they raise
#: (TypeError, "isn't a type object") and run nothing.
_RESOLVING = frozenset(("GLOBAL", "STACK_GLOBAL", "INST"))
_EXTENSIONS = frozenset(("EXT1", "EXT2", "EXT4"))
_IMPORTING = (b"c", b"i")  # GLOBAL, INST
#: Opcodes on which every loader that reads a file's first pickle raises: none of them
#: (pickle.load, joblib's pure-Python unpickler, np.load, torch.load's first legacy pickle,
#: the weights_only unpickler) gives a persistent_load or out-of-band buffers.
_RAISING = frozenset(("PERSID", "BINPERSID", "NEXT_BUFFER"))
#: torch's legacy magic number: a first pickle of plain data equal to it makes torch.load read
#: on (its next pickles), any other value makes it raise.
_TORCH_MAGIC = 0x1950A86A20F9469CFC6C
_BIG_INTS = frozenset(("INT", "LONG", "LONG1", "LONG4"))


def first_pickle_is_inert(head: bytes, size: int, *, python: bool = True) -> bool:
    """Whether every loader that may read this file runs nothing on it: pickle.load of its
    first pickle fails before it resolves any name, or reads plain data that is not torch's
    legacy magic number (so torch.load raises there: "Invalid magic number"). Random data
    named ``.bin`` often begins with a few such opcodes followed by junk; pickle.load and
    np.load return a plain value, torch.load refuses it, and nothing is imported or called.
    ``head`` is the whole file when ``size`` is no longer: then running out is failing too.
    ``python``: joblib.load (CPython's pure-Python unpickler) may read it too."""
    reach, magic = _walk(head, complete=size <= len(head), size=size, python=python)
    return reach == "fails" or (reach == "stops" and not magic)


def first_reach(
    window: bytes, *, complete: bool, size: int | None = None, python: bool = True
) -> str:
    """What pickle.load of a stream beginning with ``window`` meets first: ``"reaches"`` (an
    opcode that imports or calls, with what it needs on the stack), ``"fails"`` (it raises
    first: a bad byte, a stack underflow, a missing MARK or memo entry, or the end of a
    ``complete`` window), ``"stops"`` (STOP: a value built of plain data, nothing ran), or
    ``"unproved"`` (the window ran out first).

    The stack is modelled as pickletools' ``dis`` models it; CPython's unpickler and joblib's
    (pure Python) are stricter still (a MARK fences the stack below it), so where this says
    it fails, they have failed too (tested against the real unpickler with random streams).
    ``size``: the whole stream's length, when the window is its beginning only (an argument
    longer than what is left of the stream fails the load). ``python``: the pure-Python
    unpickler (joblib.load's) may read it as well as the C one (pickle.load, np.load,
    torch.load): it resolves an INST before it looks for its MARK, and reads a last line
    without its newline."""
    return _walk(window, complete=complete, size=size, python=python)[0]


def _walk(window: bytes, *, complete: bool, size: int | None, python: bool) -> tuple[str, bool]:
    """``first_reach``'s answer, and whether an integer literal equal to torch's legacy magic
    number came before it."""
    magic = False
    stream = io.BytesIO(window)
    nxt = 0  # where the next opcode starts
    stack: list[object] = []  # pickletools stack types; ``markobject`` for each MARK
    memo: set[object] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            for op, arg, _ in pickletools.genops(stream):
                if op.name == "STOP":
                    return ("stops" if stack else "fails"), magic
                if op.name in _RESOLVING:
                    # GLOBAL resolves whatever the stack holds, INST too in the pure-Python
                    # unpickler (it imports, then looks for its MARK; the C one looks first);
                    # STACK_GLOBAL needs two strings on the stack
                    if op.name == "STACK_GLOBAL":
                        reaches = _two_names(stack)
                    else:
                        reaches = op.name == "GLOBAL" or python or pickletools.markobject in stack
                    return ("reaches" if reaches else "fails"), magic
                if op.name in _RAISING or not _stack_effect(op, arg, stack, memo):
                    return "fails", magic  # raises before the opcode does anything
                if op.name in _EXTENSIONS:
                    # an unregistered code raises ValueError; a registered one (none in a
                    # plain interpreter) resolves to a class
                    registered = getattr(copyreg, "_inverted_registry", {})
                    return ("reaches" if arg in registered else "fails"), magic
                magic = magic or (op.name in _BIG_INTS and arg == _TORCH_MAGIC)
                nxt = stream.tell()
        except GENOPS_ERRORS:
            if window[nxt : nxt + 1] in _IMPORTING:
                # genops decodes a GLOBAL/INST name as ASCII, CPython as UTF-8: CPython may
                # import what genops refused to read, unless it cannot decode it either
                marked = python or pickletools.markobject in stack or window[nxt] == ord("c")
                reach = _names_resolve(window[nxt:], complete=complete, python=python)
                return (reach if marked else "fails"), magic
            # failed on a bad byte, or ran out at the end of the whole file: nothing ran; ran
            # out at the end of the window of a longer file: not proved, unless the argument
            # it was reading is longer than the rest of the file
            if complete or stream.tell() < len(window) - 64:
                return "fails", magic
            return ("fails" if _runs_past(window, nxt, size) else "unproved"), magic
    return "unproved", magic  # pragma: no cover - genops raises before running out


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


def _names_resolve(at: bytes, *, complete: bool, python: bool) -> str:
    """A GLOBAL (``c``) or INST (``i``) genops could not read, as both of CPython's unpicklers
    read it: ``"reaches"`` when either would look the name up, ``"fails"`` when both raise
    first. The C one (pickle.load, torch.load) raises on a line without its newline or with
    nothing before it; the pure-Python one (joblib.load) takes what is left of the stream as
    the last line and drops its last byte. GLOBAL's names are decoded as UTF-8, INST's as
    ASCII. ``complete``: ``at`` runs to the end of the stream (else a line may go on);
    ``python``: the pure-Python unpickler may read it (else only the C one)."""
    codec = "utf-8" if at[:1] == b"c" else "ascii"
    first_end = at.find(b"\n", 1)
    if first_end < 0:
        module, name, lines = at[1:], b"", 0
    else:
        module = at[1:first_end]
        second_end = at.find(b"\n", first_end + 1)
        name = at[first_end + 1 : second_end if second_end >= 0 else len(at)]
        lines = 1 if second_end < 0 else 2
    if not complete and lines < 2:
        # a line runs past the window: only a byte no decoder can take proves a failure
        cut = module if lines == 0 else name
        if _undecodable(module if lines else b"", codec) or _undecodable(cut, codec, cut=True):
            return "fails"
        return "unproved"
    if not python and (lines < 2 or not module or not name):
        return "fails"  # the C unpickler: "pickle data was truncated"
    if lines < 2:  # the Python one takes the rest as the line and drops its last byte
        module, name = (module[:-1], b"") if lines == 0 else (module, name[:-1])
    # the C unpickler decodes what the Python one does, or raises first
    if _undecodable(module, codec) or _undecodable(name, codec):
        return "fails"
    return "reaches"


def _undecodable(data: bytes, codec: str, *, cut: bool = False) -> bool:
    """Whether ``data`` fails to decode; ``cut``: it may go on past its end (a sequence cut
    short at the end is not a failure then)."""
    try:
        data.decode(codec)
    except UnicodeDecodeError as exc:
        return not (cut and exc.reason == "unexpected end of data")
    return False


_MEMO_PUT = ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE")
_MEMO_GET = ("GET", "BINGET", "LONG_BINGET")


#: What pickletools says an opcode pushes, where that is never a str (STACK_GLOBAL raises on
#: anything but two; a BINSTRING may decode to one, a memo entry may be one).
_NEVER_STR = frozenset(
    getattr(pickletools, name)
    for name in (
        "pyint", "pylong", "pyinteger_or_bool", "pybool", "pyfloat", "pybytes", "pybytearray",
        "pynone", "pytuple", "pylist", "pydict", "pyset", "pyfrozenset", "markobject",
    )
)  # fmt: skip


def _two_names(stack: list[object]) -> bool:
    """Whether the top two items may be the strings STACK_GLOBAL resolves."""
    return len(stack) >= 2 and not any(item in _NEVER_STR for item in stack[-2:])


def _stack_effect(
    op: pickletools.OpcodeInfo, arg: object, stack: list[object], memo: set[object]
) -> bool:
    """Apply one opcode's stack effect; False when the unpickler raises on it (too few items,
    no MARK, a memo key never put, a PUT with nothing to put)."""
    before, after = op.stack_before, list[object](op.stack_after)
    mark = pickletools.markobject
    if op.name == "POP" and stack and stack[-1] is mark:
        stack.pop()  # both unpicklers: POP on a MARK drops the MARK (pickletools' dis too)
        return True
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
    if op.name == "DUP":  # a copy of the top, of its type
        after = [stack[-1], stack[-1]]
    del stack[len(stack) - count :]
    stack.extend(after)
    return True


def runs_nothing(
    window: bytes, *, complete: bool, size: int | None = None, python: bool = True
) -> bool:
    """Whether pickle.load of a stream beginning with ``window`` provably runs nothing (it
    fails or stops first); ``complete``: the window is the whole stream; ``python``: joblib's
    pure-Python unpickler may read it too."""
    reach = first_reach(window, complete=complete, size=size, python=python)
    return reach in ("fails", "stops")

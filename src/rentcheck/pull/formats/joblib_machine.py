"""The symbolic machine as joblib's unpickler runs it: ``NumpyArrayWrapper`` BUILDs read arrays.

``joblib.dump`` replaces every numpy array by a ``joblib.numpy_pickle.NumpyArrayWrapper``
(``NEWOBJ`` + ``BUILD`` with a state dict: ``subclass``, ``shape``, ``order``, ``dtype``,
``allow_mmap``, ``numpy_array_alignment_bytes``) and writes the array's bytes right after the
``BUILD``. joblib's ``NumpyUnpickler.load_build`` runs the ordinary BUILD, and when the object on
top is such a wrapper it reads the array straight from the file (a padding-length byte and
padding first when the alignment is set; an object array is a nested pickle instead). So this
machine keeps what the ordinary one forgets: the items of dicts, the attributes of wrappers and
the arguments and state of ``numpy.dtype`` calls (``joblib_values``), enough to know exactly how
many bytes joblib will read and how to scan them.
"""

from __future__ import annotations

import itertools
import math

from rentcheck.pull.formats.joblib_values import (
    WRAPPER,
    ArraySpec,
    Dict,
    Dtype,
    List,
    Owned,
    Unprovable,
    Wrapper,
    array_spec,
    dtype_facts,
    is_none,
)
from rentcheck.pull.formats.pickle_allowlist import NUMPY_GLOBALS
from rentcheck.pull.formats.pickle_machine import (
    NO_REFS,
    OPS,
    Global,
    Handler,
    Leaf,
    Machine,
    Malformed,
    Obj,
    items_of,
)

__all__ = ["JOBLIB_GLOBALS", "JOBLIB_OPS", "JoblibMachine"]

#: What joblib.load needs to rebuild the arrays joblib.dump wrote, and nothing more: the
#: wrapper (``NEWOBJ`` runs ``object.__new__``, ``BUILD`` only sets attributes), the classes it
#: names as ``subclass`` (looked up, never called on numpy 2), ``numpy.dtype`` (called with a
#: type code, then given its state) and numpy's own array/scalar reconstruction for object
#: arrays, whose nested pickle joblib reads with the same unrestricted ``find_class``.
#: numpy < 2 pickled the subclasses by their defining modules, so files dumped with numpy 1.x
#: (joblib's own test data among them) name them so.
JOBLIB_GLOBALS: frozenset[str] = frozenset(
    {
        WRAPPER,
        "numpy.ndarray",
        "numpy.matrix",
        "numpy.matrixlib.defmatrix.matrix",
        "numpy.memmap",
        "numpy.core.memmap.memmap",
        "numpy._core.memmap.memmap",
        "numpy.dtype",
        *NUMPY_GLOBALS,
    }
)
_SERIALS = itertools.count()
MAX_TRACKED = 200_000  # dicts, wrappers and dtypes whose contents are kept
MAX_ITEMS = 64  # items kept per dict: a wrapper's state has six, a dtype's fields a few dozen
_WRAPPER_ARGS = ("subclass", "shape", "order", "dtype", "allow_mmap", "numpy_array_alignment_bytes")


class JoblibMachine(Machine):
    """``reads_arrays``: joblib's own unpickler (False: the plain one it runs for the nested
    pickle of an object array, where a wrapper's BUILD is an ordinary BUILD)."""

    def __init__(self, allowed: frozenset[str], *, reads_arrays: bool = True) -> None:
        super().__init__(allowed | JOBLIB_GLOBALS)
        self.reads_arrays = reads_arrays
        self.serial = next(_SERIALS)  # the owner of the values it makes
        self.tracked = 0
        self.arrays = 0
        self.pending: ArraySpec | None = None  # an array joblib reads right after this BUILD

    def plain_copy(self) -> JoblibMachine:
        """This machine as plain ``pickle.load`` would go on from here: wrappers are ordinary
        objects; stack, marks and memo copied; their values shared, and never changed by the
        copy (see ``Owned``)."""
        other = JoblibMachine(self.allowed, reads_arrays=False)
        other.stack, other.marks, other.memo = list(self.stack), list(self.marks), dict(self.memo)
        other.globals = dict(self.globals)
        other.tracked = self.tracked
        return other

    def track(self) -> bool:
        self.tracked += 1
        return self.tracked <= MAX_TRACKED


def _owns(m: Machine, value: object) -> bool:
    return isinstance(m, JoblibMachine) and isinstance(value, Owned) and value.owner == m.serial


def _record(m: Machine, target: object, pairs: list[tuple[object, object]]) -> None:
    if not isinstance(target, Dict) or not _owns(m, target):
        return
    for key, value in pairs:
        if len(target.items) >= MAX_ITEMS and key not in target.items:
            target.complete = False
        else:
            target.items[key] = value


def _empty(m: Machine, name: str, arg: object) -> None:
    if isinstance(m, JoblibMachine) and m.track():
        m.push(Dict(m.serial) if name == "EMPTY_DICT" else List(m.serial))
    else:
        OPS[name](m, name, arg)


def _replace_top(m: Machine, made: Obj) -> None:
    """``made`` in place of the value an ordinary handler just pushed (its refs kept)."""
    top = m.stack[-1]
    if isinstance(top, Obj) and top.refs is not NO_REFS:
        made.refs = top.refs
    m.stack[-1] = made


def _container(m: Machine, name: str, arg: object) -> None:
    items = list(m.stack[m.marks[-1] :]) if m.marks else []
    OPS[name](m, name, arg)
    if not isinstance(m, JoblibMachine) or not m.track():
        return
    if name == "DICT":
        made = Dict(m.serial)
        _record(m, made, list(zip(items[::2], items[1::2], strict=False)))
        _replace_top(m, made)
    else:
        _replace_top(m, List(m.serial, len(items)))


def _appends(m: Machine, name: str, arg: object) -> None:
    if name == "APPEND":
        target, n = (m.stack[-2] if len(m.stack) >= 2 else None), 1
    else:
        at = m.marks[-1] if m.marks else 0
        target, n = (m.stack[at - 1] if at else None), len(m.stack) - at
    OPS[name](m, name, arg)
    if isinstance(target, List) and _owns(m, target):
        target.count += n


def _setitems(m: Machine, name: str, arg: object) -> None:
    if name == "SETITEM":
        target = m.stack[-3] if len(m.stack) >= 3 else None
        pairs = [(m.stack[-2], m.stack[-1])] if len(m.stack) >= 3 else []
    else:
        at = m.marks[-1] if m.marks else 0
        target = m.stack[at - 1] if at else None
        flat = m.stack[at:]
        pairs = list(zip(flat[::2], flat[1::2], strict=False))
    OPS[name](m, name, arg)
    _record(m, target, pairs)


def _call(m: Machine, name: str, arg: object) -> None:
    at = -3 if name == "NEWOBJ_EX" else -2
    func = m.stack[at] if len(m.stack) >= -at else None
    args = items_of(m.stack[at + 1]) if len(m.stack) >= -at else None
    OPS[name](m, name, arg)
    if not isinstance(func, Global) or not isinstance(m, JoblibMachine) or not m.track():
        return
    made: Obj | None = None
    if func.name == WRAPPER and m.reads_arrays:
        wrapper = Wrapper(m.serial, func.name)
        if name == "REDUCE":  # NumpyArrayWrapper(...) runs __init__; NEWOBJ only __new__
            given = args or ()
            if not 4 <= len(given) <= len(_WRAPPER_ARGS):
                raise Malformed(f"NumpyArrayWrapper called with {len(given)} arguments")
            wrapper.attrs = {"allow_mmap": Leaf("bool", False), "numpy_array_alignment_bytes": 16}
            wrapper.attrs.update(zip(_WRAPPER_ARGS, given, strict=False))
        made = wrapper
    elif func.name == "numpy.dtype" and args is not None:
        made = Dtype(m.serial, func.name, args)
    if made is not None:
        _replace_top(m, made)


def _build(m: Machine, name: str, arg: object) -> None:
    state = m.stack[-1] if len(m.stack) >= 2 else None
    target = m.stack[-2] if len(m.stack) >= 2 else None
    OPS[name](m, name, arg)
    if isinstance(target, Dtype) and _owns(m, target):
        target.state = state
    elif isinstance(target, Obj) and target.type == "numpy.ndarray":
        _check_array_state(m, state)
    if not isinstance(target, Wrapper) or not isinstance(m, JoblibMachine) or not m.reads_arrays:
        return  # a plain unpickler's BUILD: attributes only
    _set_attributes(target, state)
    m.arrays += 1
    m.pending = array_spec(target, m.arrays)
    result = Obj(WRAPPER, "numpy.ndarray")
    result.refs = [("", m.pending.key)]
    m.stack[-1] = result


def _check_array_state(m: Machine, state: object) -> None:
    """``ndarray.__setstate__((version, shape, dtype, fortran, data))`` of an object array
    copies ``prod(shape)`` items out of the list ``data``: numpy 2.4 does not check its length,
    and a shorter list crashes the loader (a read past the list: memory corruption)."""
    parts = items_of(state)
    if parts is None or len(parts) != 5:
        return
    shape, dtype, data = parts[1], parts[2], parts[4]
    try:
        has_object = dtype_facts(dtype)[1]
    except Unprovable:
        return  # not a dtype this machine followed: numpy checks the rest itself
    dims = items_of(shape)
    if not has_object or dims is None or not all(type(d) is int for d in dims):
        return
    need = math.prod(int(d) for d in dims)  # type: ignore[call-overload]
    if not isinstance(data, List) or data.count < need:
        have = f"a list of {data.count}" if isinstance(data, List) else "no list it can count"
        m.flag(
            f"BUILD gives a numpy object array of {need} elements {have}: numpy's __setstate__ "
            "reads past the list (the loader crashes; memory corruption)"
        )


def _set_attributes(wrapper: Wrapper, state: object) -> None:
    """``load_build``: ``state`` (or ``(state, slotstate)``) updates the instance's attributes."""
    if "__setstate__" in wrapper.attrs:
        raise Unprovable("a NumpyArrayWrapper given its own __setstate__")
    parts = items_of(state)
    dicts = parts if parts is not None and len(parts) == 2 else (state,)
    for part in dicts:
        if is_none(part):
            continue
        if not isinstance(part, Dict) or not part.complete:
            raise Unprovable("a NumpyArrayWrapper whose state is not a plain dict")
        for key, value in part.items.items():
            if not isinstance(key, str):
                raise Unprovable("a NumpyArrayWrapper state with a key that is not a string")
            wrapper.attrs[key] = value


def _proto(m: Machine, name: str, arg: object) -> None:
    if name == "PROTO" and isinstance(arg, int) and arg > 5:  # pickle.HIGHEST_PROTOCOL
        raise Malformed(f"unsupported pickle protocol: {arg}")  # as pickle's unpickler says
    OPS[name](m, name, arg)


#: The joblib handlers, over the ordinary ones.
JOBLIB_OPS: dict[str, Handler] = {
    **OPS,
    "EMPTY_DICT": _empty,
    "EMPTY_LIST": _empty,
    "DICT": _container,
    "LIST": _container,
    "APPEND": _appends,
    "APPENDS": _appends,
    "SETITEM": _setitems,
    "SETITEMS": _setitems,
    "REDUCE": _call,
    "NEWOBJ": _call,
    "NEWOBJ_EX": _call,
    "BUILD": _build,
    "PROTO": _proto,
}

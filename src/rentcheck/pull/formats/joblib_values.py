"""What the joblib machine keeps of the values it builds, and the array layout they describe.

The ordinary symbolic machine keeps only kinds; joblib's reader needs more: the items of the
dicts that become a wrapper's attributes, the arguments and state of ``numpy.dtype`` calls, and
the length of the lists an object array is rebuilt from. ``array_spec`` turns a wrapper's
attributes into the exact bytes joblib reads (the item size and ``hasobject`` as numpy derives
them from a pickled dtype); anything it cannot settle exactly is ``Unprovable``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rentcheck.pull.formats.pickle_machine import Leaf, Obj, items_of

__all__ = [
    "WRAPPER",
    "ArraySpec",
    "Dict",
    "Dtype",
    "List",
    "Owned",
    "Unprovable",
    "Wrapper",
    "array_spec",
    "dtype_facts",
    "is_none",
]

WRAPPER = "joblib.numpy_pickle.NumpyArrayWrapper"
_FLOATS = {"f2": "F16", "f4": "F32", "f8": "F64", "c8": "C64", "c16": "C128"}


class Unprovable(Exception):
    """The stream builds something joblib.dump never writes, so its layout cannot be proved."""


class Owned(Obj):
    """A value whose contents this module keeps; only the machine that made it changes them
    (a shadow machine sees another's values but must not alter what that one reads)."""

    __slots__ = ("owner",)

    def __init__(self, owner: int, call: str | None, type_: str) -> None:
        super().__init__(call, type_)
        self.owner = owner


class Dict(Owned):
    __slots__ = ("complete", "items")

    def __init__(self, owner: int) -> None:
        super().__init__(owner, None, "builtins.dict")
        self.items: dict[object, object] = {}
        self.complete = True  # False once an item was not kept


class List(Owned):
    __slots__ = ("count",)

    def __init__(self, owner: int, count: int = 0) -> None:
        super().__init__(owner, None, "builtins.list")
        self.count = count


class Wrapper(Owned):
    __slots__ = ("attrs",)

    def __init__(self, owner: int, call: str) -> None:
        super().__init__(owner, call, WRAPPER)
        self.attrs: dict[str, object] = {}


class Dtype(Owned):
    __slots__ = ("args", "state")

    def __init__(self, owner: int, call: str, args: tuple[object, ...]) -> None:
        super().__init__(owner, call, "numpy.dtype")
        self.args = args
        self.state: object = None


@dataclass(frozen=True)
class ArraySpec:
    key: str  # names the array until its path in the object is known
    code: str  # numpy type code as pickled ('f8', 'V12', 'U5')
    shape: tuple[int, ...]
    nbytes: int
    padded: bool  # a padding-length byte (and padding) precedes the bytes
    has_object: bool  # a nested pickle instead of raw bytes
    scan: str | None  # finite-scan dtype of little-endian float data, else None
    big_endian: bool


def is_none(value: object) -> bool:
    return isinstance(value, Leaf) and value.kind == "none"


#: numpy.dtype nodes one array's dtype may visit: a real structured dtype has a few dozen.
#: Fields that share one dtype are settled once (``seen``), so a 13 KB file whose dtypes
#: share 64 fields eight levels deep costs 8 x 64 visits, not 64 ** 8.
MAX_DTYPE_VISITS = 4096


def dtype_facts(
    dtype: object, depth: int = 0, seen: dict[int, tuple[int, bool, bool]] | None = None
) -> tuple[int, bool, bool]:
    """(item size, holds Python objects, big-endian) of a pickled ``numpy.dtype``."""
    if seen is None:
        seen = {}
    if not isinstance(dtype, Dtype) or depth > 8:
        raise Unprovable("an array dtype that is not a pickled numpy.dtype")
    known = seen.get(id(dtype))
    if known is not None:
        return known
    if len(seen) >= MAX_DTYPE_VISITS:
        raise Unprovable(f"a numpy.dtype of more than {MAX_DTYPE_VISITS} nested dtypes")
    code = dtype.args[0] if dtype.args else None
    state = items_of(dtype.state)
    if not isinstance(code, str) or state is None or len(state) < 8:
        raise Unprovable("a numpy.dtype without its type code and state")
    byteorder, subarray, names, fields, elsize, _, flags = state[1:8]
    if not isinstance(elsize, int) or not isinstance(flags, int):
        raise Unprovable("a numpy.dtype state whose sizes are not numbers")
    kind, digits = code.lstrip("<>=|")[:1], code.lstrip("<>=|")[1:]
    size = elsize if elsize > 0 else int(digits) if digits.isdigit() else -1
    if size < 0 or kind not in "biufcmMOSUV?":
        raise Unprovable(f"numpy type code {code!r}")
    has_object = kind == "O"
    if not all(is_none(part) for part in (subarray, names, fields)):
        has_object |= _nested_objects(subarray, fields, depth, seen)
    if has_object != bool(flags & 1):  # numpy's own NPY_ITEM_HASOBJECT must agree
        raise Unprovable("a numpy.dtype whose object flag contradicts its fields")
    facts = (size, has_object, byteorder == ">")
    seen[id(dtype)] = facts
    return facts


def _nested_objects(
    subarray: object, fields: object, depth: int, seen: dict[int, tuple[int, bool, bool]]
) -> bool:
    found = False
    sub = items_of(subarray)
    if sub is not None:
        found |= dtype_facts(sub[0] if sub else None, depth + 1, seen)[1]
    if not is_none(fields):
        if not isinstance(fields, Dict) or not fields.complete:
            raise Unprovable("a structured numpy.dtype whose fields cannot be read")
        for value in fields.items.values():
            entry = items_of(value)
            found |= dtype_facts(entry[0] if entry else None, depth + 1, seen)[1]
    return found


def array_spec(wrapper: Wrapper, number: int) -> ArraySpec:
    """What joblib reads for ``wrapper`` (array ``number`` of the file), or ``Unprovable``."""
    shape = wrapper.attrs.get("shape")
    if not isinstance(shape, tuple) or not all(type(d) is int and d >= 0 for d in shape):
        raise Unprovable("a NumpyArrayWrapper whose shape is not a tuple of sizes")
    dtype = wrapper.attrs.get("dtype")
    size, has_object, big = dtype_facts(dtype)
    count = math.prod(shape)
    if count * max(size, 1) >= 1 << 62:
        raise Unprovable(f"an array of {count} elements")
    align = wrapper.attrs.get("numpy_array_alignment_bytes")
    padded = not (align is None or is_none(align))
    code = str(dtype.args[0]) if isinstance(dtype, Dtype) else "?"
    scan = None
    state = (items_of(dtype.state) or ()) if isinstance(dtype, Dtype) else ()
    plain = all(is_none(f) for f in state[2:5])  # no subarray, names or fields
    if plain and not big:
        scan = _FLOATS.get(code.lstrip("<>=|"))
    return ArraySpec(
        f"array {number}", code, shape, count * size, padded, has_object, scan, big and plain
    )

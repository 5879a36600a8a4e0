"""The symbolic pickle machine behind ``pickle_safety``: values, stack, memo and opcodes.

Values are plain strings and ints, ``Global`` (a resolved ``module.name``), ``Pers`` (a torch
storage persistent id), ``Tuple`` and ``Obj`` (an opaque container or call result, with the
type CPython would give it). Containers keep only the (path, storage key) pairs found inside
them, so memory grows with the number of tensors, not with the pickle; every structure is
bounded by the caps below. The memo is a dict as in CPython's unpickler (``MEMOIZE`` stores at
``len(memo)``), so a memo trick resolves here exactly as it would there.

Two verdicts are kept apart: ``unsafe`` (the stream can reach something outside the
allow-list: hostile) and ``refused`` (torch's ``weights_only`` unpickler would refuse a
construct that is harmless in itself, e.g. the ``FRAME`` of a protocol-4 pickle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rentcheck.pull.formats.pickle_allowlist import (
    ALLOWED_GLOBALS,
    REBUILD_FUNCTIONS,
    STORAGE_DTYPES,
    TORCH_DTYPES,
    normalize_global,
    numpy_dtype_class,
)
from rentcheck.pull.formats.pickle_calls import (
    DEVICE,
    NEW_WITHOUT_ARGS,
    NON_CALLABLE,
    call_refusal,
)
from rentcheck.pull.formats.storage_views import StorageViews

__all__ = [
    "LEAF",
    "OPS",
    "TORCH_OPS",
    "Global",
    "Handler",
    "Machine",
    "Malformed",
    "Obj",
    "StorageRef",
    "kind",
]

MAX_STACK = 100_000  # real pickles stay below a few thousand (batches of 1000)
MAX_REFS = 200_000  # (path, storage) pairs kept for naming; past it tensors go unnamed
MAX_MEMO = 1_000_000  # memo entries (one per PUT/MEMOIZE of a distinct index)
MAX_ALLOC = 1 << 20  # bytes an allowed constructor may be asked for by a bare int (writers: 0)
_ALLOCATING = frozenset({"builtins.bytearray", "builtins.bytes"})

#: The opcodes torch 2.13's ``weights_only`` unpickler implements (``_weights_only_unpickler``);
#: any other opcode makes it raise "Unsupported operand".
TORCH_OPS = frozenset(
    {
        "GLOBAL",
        "NEWOBJ",
        "REDUCE",
        "BUILD",
        "APPEND",
        "APPENDS",
        "SETITEM",
        "SETITEMS",
        "MARK",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "NONE",
        "NEWFALSE",
        "NEWTRUE",
        "EMPTY_TUPLE",
        "EMPTY_LIST",
        "EMPTY_DICT",
        "EMPTY_SET",
        "BININT",
        "BININT1",
        "BININT2",
        "BINFLOAT",
        "BINUNICODE",
        "SHORT_BINSTRING",
        "BINPERSID",
        "BINGET",
        "LONG_BINGET",
        "BINPUT",
        "LONG_BINPUT",
        "LONG1",
        "PROTO",
        "STOP",
    }
)
#: Modules torch refuses even when a user allow-lists a name in them.
TORCH_BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})
#: Types torch's BUILD accepts besides the allow-listed ones.
_BUILDABLE = frozenset({"torch.Tensor", "torch.nn.parameter.Parameter", "collections.OrderedDict"})
_TENSOR = "torch.Tensor"
#: Codec names ``_codecs.encode`` may be called with: the one protocol-2 pickles of ``bytes``
#: carry (``latin1``), and codecs every interpreter has loaded at start-up.
_CODECS = frozenset({"latin1", "latin-1", "utf-8", "utf8", "ascii"})


@dataclass(frozen=True)
class StorageRef:
    """One torch storage named by a persistent id ``('storage', type, key, location, numel)``."""

    key: str
    storage_type: str
    numel: int
    location: str
    itemsize: int
    scan_dtype: str | None  # finite-scan dtype (F32, BF16, ...) or None for non-float data
    tensor: str  # name of the first tensor that uses it ("" if unknown)


class Malformed(Exception):
    """The pickle is not well-formed; the message says where and why."""


class Global:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Pers:
    __slots__ = ("key",)

    def __init__(self, key: str | None) -> None:
        self.key = key


#: The shared "no refs" list: most containers hold no tensor, and an empty list per container
#: would be most of the memory a hostile pickle can make us spend. Never mutate it.
NO_REFS: list[tuple[str, str]] = []


class Obj:
    """A container or call result; ``refs`` are (path, storage key) pairs found inside it."""

    __slots__ = ("call", "refs", "type")

    def __init__(self, call: str | None = None, type_: str | None = None) -> None:
        self.call = call  # qualified name of the callable that produced it
        self.type = type_  # the qualified type CPython would give it; None when unknown
        self.refs: list[tuple[str, str]] = NO_REFS  # replaced, never mutated, when shared


class Tuple:
    """A tuple holding storage references: its items and their refs (a tuple without any is a
    plain Python tuple); ``bare``: the storages it holds as such, not as tensors."""

    __slots__ = ("bare", "items", "refs")

    def __init__(
        self, items: tuple[object, ...], refs: list[tuple[str, str]], bare: frozenset[str]
    ) -> None:
        self.items = items
        self.refs = refs
        self.bare = bare


def bare_storages(value: object) -> frozenset[str]:
    """The storages ``value`` holds as storages (a persistent id, or a tuple of them)."""
    if isinstance(value, Pers):
        return frozenset() if value.key is None else frozenset((value.key,))
    return value.bare if isinstance(value, Tuple) else frozenset()


class Leaf:
    """A scalar whose value does not matter, only its kind (None, bool, float, bytes)."""

    __slots__ = ("kind", "truthy")

    def __init__(self, kind_: str, truthy: bool | None) -> None:
        self.kind, self.truthy = kind_, truthy


LEAF = Leaf("", None)
_LEAVES = {
    "NONE": Leaf("none", False),
    "NEWTRUE": Leaf("bool", True),
    "NEWFALSE": Leaf("bool", False),
    "FLOAT": Leaf("float", None),
    "BINFLOAT": Leaf("float", None),
}
_BYTES = Leaf("bytes", None)
_CONTAINERS = ("builtins.list", "builtins.dict", "builtins.set")
# Every list/dict/set without a tensor in it is one shared object per type and state (empty,
# or filled with plain values): no allocation per container, which a hostile pickle would
# otherwise turn into memory. A fresh Obj replaces it once a tensor is added.
EMPTIES = {name: Obj(None, name) for name in _CONTAINERS}
FILLED = {name: Obj(None, name) for name in _CONTAINERS}
_SHARED = frozenset(id(o) for o in (*EMPTIES.values(), *FILLED.values()))
_EMPTY_IDS = frozenset(id(o) for o in EMPTIES.values())


def kind_of(value: object) -> str:
    """The argument kind ``pickle_calls`` judges calls by ("" when unknown)."""
    if isinstance(value, str):
        return "str"
    if isinstance(value, int):
        return "int"
    if isinstance(value, Leaf):
        return value.kind
    if isinstance(value, (tuple, Tuple)):
        return "tuple"
    if isinstance(value, Obj) and value.type is not None:
        empty = id(value) in _EMPTY_IDS
        return ("empty:" if empty else "full:") + value.type
    return ""


def truthy(value: object) -> bool | None:
    """Whether ``value`` is true in Python, when the machine knows."""
    if isinstance(value, (str, int)):
        return bool(value)
    if isinstance(value, Leaf):
        return value.truthy
    items = items_of(value)
    if items is not None:
        return bool(items)
    if isinstance(value, Obj) and id(value) in _SHARED:
        return id(value) not in _EMPTY_IDS
    return None


def result_type(func: str, args: tuple[object, ...]) -> str:
    """The type of ``func(*args)`` as far as the allow-list can tell (for BUILD's type check)."""
    if func in REBUILD_FUNCTIONS or func == "torch._tensor._rebuild_from_type_v2":
        return "torch.nn.parameter.Parameter" if "parameter" in func else _TENSOR
    if func == "_codecs.encode":
        return "builtins.bytes"
    if func == "torch.serialization._get_layout":
        return "torch.layout"
    if func.endswith("multiarray._reconstruct") and args and isinstance(args[0], Global):
        return args[0].name
    if func == "numpy.dtype" and args and isinstance(args[0], str):
        return numpy_dtype_class(args[0])
    return func  # an allow-listed class: its instance


class Machine:
    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed
        self.stack: list[object] = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.globals: dict[str, None] = {}
        self.unsafe: dict[str, None] = {}
        self.refused: dict[str, None] = {}  # what torch's weights_only unpickler would refuse
        self.capped: str | None = None  # the work cap that stopped the analysis
        self.storages: dict[str, StorageRef] = {}
        self.dtypes: dict[str, tuple[int, str | None]] = {}
        self.bad_views: list[str] = []
        self.persid_sizes: set[int] = set()  # items in each storage persistent id
        self.views = StorageViews()  # the bytes of each storage some tensor views
        self.hashing: dict[int, tuple[object, bool]] = {}  # tuple id -> (it, unhashable)
        self.nrefs = 0
        self.protocol: int | None = None

    # -- helpers -------------------------------------------------------------------------
    def pop(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise Malformed("stack underflow")
        return self.stack.pop()

    def pop_mark(self) -> list[object]:
        if not self.marks:
            raise Malformed("MARK expected")
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def top(self) -> object:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise Malformed("stack underflow")
        return self.stack[-1]

    def push(self, value: object) -> None:
        if len(self.stack) >= MAX_STACK:
            raise Malformed(f"stack deeper than {MAX_STACK}")
        self.stack.append(value)

    def refs_of(self, value: object) -> list[tuple[str, str]]:
        if isinstance(value, (Obj, Tuple)):
            return value.refs
        if isinstance(value, Pers) and value.key is not None:
            return [("", value.key)]
        return []

    def copy_refs(
        self, head: str, refs: list[tuple[str, str]], into: list[tuple[str, str]]
    ) -> None:
        """Append ``refs`` under ``head`` to ``into`` while the naming budget lasts: one item
        referenced a million times through the memo must not cost a million copies."""
        room = MAX_REFS - self.nrefs
        if room <= 0 or not refs:
            return
        part = refs[:room]
        into += [(_join(head, p), k) for p, k in part]
        self.nrefs += len(part)

    def tuple_(self, items: list[object]) -> Tuple | tuple[object, ...]:
        """A plain tuple when nothing inside refers to a storage (the common, cheap case)."""
        refs: list[tuple[str, str]] = []
        for i, item in enumerate(items):
            if self.nrefs >= MAX_REFS:
                break
            self.copy_refs(str(i), self.refs_of(item), refs)
        if not refs:
            return tuple(items)
        bare = frozenset().union(*(bare_storages(item) for item in items))
        return Tuple(tuple(items), refs, bare)

    def attach(self, target: object, key: object, value: object) -> Obj:
        """Add ``value`` under ``key`` to ``target``; returns the target (a fresh one in place of
        a shared empty container on top of the stack, once it receives a tensor)."""
        if not isinstance(target, Obj):
            raise Malformed(f"cannot add items to {kind(target)}")
        refs = self.refs_of(value)
        if id(target) in _EMPTY_IDS and not (refs and self.nrefs < MAX_REFS):
            filled = FILLED[target.type or "builtins.list"]
            if self.stack and self.stack[-1] is target:
                self.stack[-1] = filled
            return filled
        if refs and self.nrefs < MAX_REFS:
            if id(target) in _SHARED:
                shared, target = target, Obj(None, target.type)
                if self.stack and self.stack[-1] is shared:
                    self.stack[-1] = target
            if target.refs is NO_REFS:
                target.refs = []
            label = key if isinstance(key, str) else str(key) if isinstance(key, int) else "?"
            self.copy_refs(label, refs, target.refs)
        return target

    def refuse(self, message: str) -> None:
        self.refused.setdefault(message, None)

    def flag(self, message: str) -> None:
        self.unsafe.setdefault(message, None)

    # -- opcodes with structure ----------------------------------------------------------
    def global_(self, module: object, name: object) -> None:
        if not isinstance(module, str) or not isinstance(name, str):
            self.flag("STACK_GLOBAL with a computed module or name")
            self.push(Global("?"))
            return
        qual = normalize_global(module, name)
        self.globals.setdefault(qual, None)
        if qual not in self.allowed:
            self.flag(f"global '{qual}' is not on the state-dict allow-list")
        elif qual.partition(".")[0] in TORCH_BLOCKED_MODULES:
            self.refuse(f"global '{qual}' is in a module torch always blocks")
        self.push(Global(qual))

    def call(self, func: object, args: object, opname: str) -> None:
        if not isinstance(func, Global):
            self.flag(f"{opname} on a computed callable ({kind(func)}), not a named global")
            self.push(Obj())
            return
        items = items_of(args)
        if items is None:
            raise Malformed(f"{opname} arguments are {kind(args)}, not a tuple")
        if func.name == "_codecs.encode" and len(items) > 1 and items[1] not in _CODECS:
            # the unpickler looks the codec up by the name the file gives: importing
            # ``encodings.<name>`` (and whatever search functions are registered) on the way
            codec = items[1]
            what = repr(codec[:40]) if isinstance(codec, str) else f"named by {kind(codec)}"
            self.flag(f"'_codecs.encode' looks up the codec {what} (an import of "
                      "encodings.<name>); pickle itself writes only 'latin1'")  # fmt: skip
        if func.name in _ALLOCATING and items and type(items[0]) is int and items[0] > MAX_ALLOC:
            # bytearray(2**36) is ten bytes of pickle and 64 GiB of the loader's memory
            self.capped = f"'{func.name}({items[0]})' allocates more than {MAX_ALLOC} bytes"
            raise Malformed(self.capped)
        if opname == "NEWOBJ" and (func.name in REBUILD_FUNCTIONS or func.name in NON_CALLABLE):
            self.refuse(f"NEWOBJ on '{func.name}', which is not a class")
        elif opname == "NEWOBJ" and func.name in ALLOWED_GLOBALS:
            # torch.save reduces torch's own classes with REDUCE; torch's NEWOBJ runs
            # cls.__new__(cls, *args) with whatever the file gives (torch.Tensor(dict) raises):
            # accepted only without arguments, on a class where that succeeds
            if items or func.name not in NEW_WITHOUT_ARGS:
                self.refuse(f"NEWOBJ on '{func.name}' with arguments torch is not proved to take")
        elif opname != "NEWOBJ" and func.name in self.allowed:
            why = call_refusal(
                func.name,
                [kind_of(i) for i in items],
                [i if isinstance(i, str) else None for i in items],
            )
            if why is not None:
                self.refuse(f"{opname} fails in torch: {why}")
        result = Obj(func.name, result_type(func.name, items))
        if isinstance(args, Tuple):  # a call is transparent for naming
            result.refs = []
            self.copy_refs("", args.refs, result.refs)
        if func.name in REBUILD_FUNCTIONS:
            self.rebuild(func.name, items, result)
        self.push(result)

    def rebuild(self, func: str, args: tuple[object, ...], result: Obj) -> None:
        pers = args[0] if args else None
        if func.endswith(("_v2", "_v3", "._rebuild_tensor")) and not isinstance(pers, Pers):
            # torch reads storage.dtype / storage._untyped_storage of its first argument
            self.refuse(f"'{func}' given {kind(pers)} where its storage goes")
        if not isinstance(pers, Pers) or pers.key is None:
            return
        result.refs = [("", pers.key)]
        view: tuple[int, str | None] | None = None
        if func.endswith("_v3") and len(args) > 6 and isinstance(args[6], Global):
            # v3's dtype argument types the tensor whatever the storage class says (a
            # ByteStorage viewed as float32): the storage is scanned as the first float dtype
            # any tensor views it as, so a NaN cannot hide behind a byte storage class
            view = TORCH_DTYPES.get(args[6].name.removeprefix("torch."))
            if view is not None:
                seen = self.dtypes.get(pers.key)
                if seen is None or (seen[1] is None and view[1] is not None):
                    self.dtypes[pers.key] = view
        if func.endswith(("_v2", "_v3", "._rebuild_tensor")) and len(args) >= 4:
            self.check_view(pers.key, args[1], args[2], args[3], view)

    def buildable(self, target: object) -> bool:
        """Whether torch's BUILD accepts ``target``: a Tensor, a Parameter, an OrderedDict or an
        instance of an allow-listed type (``type(inst)`` in its values)."""
        if not isinstance(target, Obj) or target.type is None:
            return False
        return target.type in _BUILDABLE or target.type in self.allowed

    def check_view(
        self,
        key: str,
        offset: object,
        size: object,
        stride: object,
        view: tuple[int, str | None] | None = None,
    ) -> None:
        """Flag a tensor whose (offset, size, stride) reaches past its storage's elements;
        record the elements it covers (``views``) when the machine can tell which."""
        ref = self.storages.get(key)
        dims, steps = items_of(size), items_of(stride)
        if (
            dims is None
            or steps is None
            or len(dims) != len(steps)
            or not all(type(v) is int for v in (offset, *dims, *steps))
        ):
            # torch.save writes an int and two tuples of ints: anything else either fails in
            # tensor.set_ ("invalid combination of arguments") or is a view verify cannot read
            self.refuse(
                "a tensor's view is not an offset and two equally long tuples of ints (what "
                "torch.save writes); tensor.set_ fails on it, or its reach cannot be proved"
            )
            return
        if ref is None:
            return
        values = (offset, *dims, *steps)
        ints = [int(v) for v in values]  # type: ignore[call-overload]
        off, dims_i, steps_i = ints[0], ints[1 : 1 + len(dims)], ints[1 + len(dims) :]
        if any(d == 0 for d in dims_i):
            self.views.viewed(key, 0, dims_i, steps_i, 1)  # no element: nothing covered
            return
        elements, element = ref.numel, ref.itemsize
        if view is not None:  # v3: the tensor's own element size over the storage's bytes
            element = max(view[0], 1)
            elements = ref.numel * ref.itemsize // element
        elif ref.storage_type.endswith("UntypedStorage"):
            element = max(self.dtypes.get(key, (0, None))[0], 0)
            elements //= max(element, 1)
        last = off + sum((d - 1) * st for d, st in zip(dims_i, steps_i, strict=True))
        if off < 0 or any(v < 0 for v in (*dims_i, *steps_i)) or last >= elements:
            self.bad_views.append(key)
        elif element:  # an untyped storage no v3 rebuild gave a dtype: scanned whole
            self.views.viewed(key, off, dims_i, steps_i, element)

    def persid(self, pid: object) -> None:
        items = items_of(pid) or ()
        self.persid_sizes.add(len(items))
        if len(items) < 5 or items[0] != "storage":
            self.flag("persistent id that is not a torch storage reference")
            self.push(Pers(None))
            return
        _, stype, key, location, numel = items[:5]
        if not isinstance(stype, Global) or not isinstance(key, str):
            raise Malformed("storage persistent id without a storage type global and key")
        if not isinstance(numel, int) or numel < 0:
            raise Malformed(f"storage {key!r} has element count {numel!r}")
        elem = STORAGE_DTYPES.get(stype.name)
        if elem is None:
            self.flag(f"persistent id names '{stype.name}', which is not a storage type")
        itemsize, scan = TORCH_DTYPES.get(elem or "uint8", (1, None))
        if not isinstance(location, str) or not DEVICE.fullmatch(location):
            # torch restores a storage only to a device it has a deserializer for
            self.refuse(
                f"storage {key!r} is placed on {str(location)[:20]!r}, no device torch knows"
            )
        if key not in self.storages:
            loc = location if isinstance(location, str) else "?"
            self.storages[key] = StorageRef(key, stype.name, numel, loc, itemsize, scan, "")
        self.views.named(key)
        if len(items) > 5 and kind_of(items[5]) != "none":
            # torch's legacy loader unpacks it as (view key, offset, size) and fails otherwise
            view = items_of(items[5]) or ()
            if len(view) != 3 or not isinstance(view[0], str):
                raise Malformed(f"storage {key!r} has a view that is not (key, offset, size)")
            if not all(isinstance(v, int) and v >= 0 for v in view[1:]):
                raise Malformed(f"storage {key!r} has a view whose offset or size is no count")
            self.views.whole({key})  # a legacy storage view (offset, size): read whole
        self.push(Pers(key))


def _join(head: str, tail: str) -> str:
    return f"{head}.{tail}" if tail else head


def kind(value: object) -> str:
    if isinstance(value, Global):
        return f"global '{value.name}'"
    names = {str: "a string", int: "an int", Tuple: "a tuple", tuple: "a tuple"}
    return names.get(type(value), "a value")


def items_of(value: object) -> tuple[object, ...] | None:
    """The items of a symbolic tuple (plain or with refs), or None for anything else."""
    if isinstance(value, Tuple):
        return value.items
    return value if isinstance(value, tuple) else None


# -- opcode handlers: one small function per family, looked up in OPS ------------------------
def _push_arg(m: Machine, name: str, arg: object) -> None:
    m.push(arg)


def _push_leaf(m: Machine, name: str, arg: object) -> None:
    m.push(_LEAVES.get(name, _BYTES))


def _put(m: Machine, name: str, arg: object) -> None:
    # CPython: memo[len(memo)] for MEMOIZE (the dict's size, holes and all); PUT refuses < 0.
    index = len(m.memo) if name == "MEMOIZE" else arg
    if not isinstance(index, int) or index < 0:
        raise Malformed(f"{name} with index {index!r}")
    if index not in m.memo and len(m.memo) >= MAX_MEMO:
        m.capped = f"more than {MAX_MEMO} memo entries"
        raise Malformed(m.capped)
    if index >= MAX_MEMO:
        # writers number memo slots from 0; CPython's unpickler allocates an array up to the
        # index a PUT names (LONG_BINPUT 2**28: 2 GB from five bytes)
        m.capped = f"{name} at memo index {index}, past the {MAX_MEMO} any writer reaches"
        raise Malformed(m.capped)
    m.memo[index] = m.top()


def _get(m: Machine, name: str, arg: object) -> None:
    if not isinstance(arg, int) or arg not in m.memo:
        raise Malformed(f"memo {arg!r} read before it was written")
    value = m.memo[arg]
    m.views.whole(bare_storages(value))  # a second copy of a storage: no longer a view's only
    m.push(value)


def _mark(m: Machine, name: str, arg: object) -> None:
    m.marks.append(len(m.stack))


def _empty(m: Machine, name: str, arg: object) -> None:
    if name == "EMPTY_TUPLE":
        m.push(())
    else:
        m.push(EMPTIES["builtins." + name[6:].lower()])


def _tuple(m: Machine, name: str, arg: object) -> None:
    if name == "TUPLE":
        m.push(m.tuple_(m.pop_mark()))
    else:
        m.push(m.tuple_([m.pop() for _ in range(int(name[-1]))][::-1]))


def _pairs(items: list[object], name: str) -> Iterator[tuple[object, object]]:
    if len(items) % 2:
        raise Malformed(f"{name} with an odd number of items")
    it = iter(items)
    return zip(it, it, strict=True)


def _build_container(m: Machine, name: str, arg: object) -> None:
    type_ = {"DICT": "builtins.dict", "LIST": "builtins.list"}.get(name, "builtins.frozenset")
    obj = Obj(None, type_)
    items = m.pop_mark()
    pairs = _pairs(items, name) if name == "DICT" else enumerate(items)
    for key, value in pairs:
        obj = m.attach(obj, key, value)
    if obj.refs or type_ == "builtins.frozenset":
        m.push(obj)
    else:
        m.push((FILLED if items else EMPTIES)[type_])


#: What each adding opcode needs its target to be, for torch and (by method) for CPython.
_ADD_TARGETS = {
    "APPEND": ("builtins.list",),
    "APPENDS": ("builtins.list",),
    "ADDITEMS": ("builtins.set",),
    "SETITEM": ("builtins.dict", "collections.OrderedDict", "collections.Counter"),
    "SETITEMS": ("builtins.dict", "collections.OrderedDict", "collections.Counter"),
}


def _check_target(m: Machine, name: str, target: object) -> None:
    """CPython calls the target's ``append``/``extend``/``__setitem__``/``add``: on anything
    but the plain container that is a method call on an arbitrary object; torch refuses it."""
    type_ = target.type if isinstance(target, Obj) else None
    if type_ in _ADD_TARGETS[name]:
        return
    if type_ in ("builtins.list", "builtins.dict", "builtins.set", "builtins.frozenset"):
        m.refuse(f"{name} on a {type_.partition('.')[2]}")  # fails in CPython, harmlessly
    elif isinstance(target, Obj) and type_ is not None and type_ in m.allowed:
        m.refuse(f"{name} on an instance of '{type_}' (torch accepts only the plain container)")
    else:
        m.flag(f"{name} on {kind(target)} calls a method of an object no allow-list names")


def _add(m: Machine, name: str, arg: object) -> None:
    if name in ("APPEND", "SETITEM"):
        value = m.pop()
        key = m.pop() if name == "SETITEM" else "?"
        _check_target(m, name, m.top())
        if name == "SETITEM":
            _check_key(m, key)
        m.attach(m.top(), key, value)
        return
    items = m.pop_mark()
    target = m.top()
    if not items and not isinstance(target, Obj):
        raise Malformed(f"{name} on {kind(target)}")
    _check_target(m, name, target)
    pairs = list(_pairs(items, name)) if name == "SETITEMS" else [("?", i) for i in items]
    for key, value in pairs:
        if name == "SETITEMS":
            _check_key(m, key)
        target = m.attach(target, key, value)


_UNHASHABLE = (
    "builtins.list",
    "builtins.dict",
    "builtins.set",
    "builtins.bytearray",
    "collections.OrderedDict",
    "collections.Counter",
)


def _check_key(m: Machine, key: object) -> None:
    if _unhashable(m, key):
        m.refuse("a dict key that is or holds a list, dict or set (unhashable)")


def _unhashable(m: Machine, key: object) -> bool:
    """Whether hashing ``key`` raises: an unhashable container, or a tuple holding one at any
    depth. Each tuple is judged once per pickle (``m.hashing``), so keys that share deep
    tuples cost their size once, not once per key."""
    if items_of(key) is None:
        return kind_of(key).endswith(_UNHASHABLE)
    todo: list[tuple[object, bool]] = [(key, False)]
    while todo:
        node, children_done = todo.pop()
        items = items_of(node) or ()
        if children_done:
            m.hashing[id(node)] = (node, any(_judged(m, item) for item in items))
        elif id(node) not in m.hashing:
            todo.append((node, True))
            todo += [
                (i, False) for i in items if items_of(i) is not None and id(i) not in m.hashing
            ]
    return m.hashing[id(key)][1]


def _judged(m: Machine, item: object) -> bool:
    if items_of(item) is None:
        return kind_of(item).endswith(_UNHASHABLE)
    return m.hashing[id(item)][1]


def _global(m: Machine, name: str, arg: object) -> None:
    if name == "GLOBAL":
        module, _, attr = str(arg).partition(" ")
        m.global_(module, attr)
    else:
        attr_v, module_v = m.pop(), m.pop()
        m.global_(module_v, attr_v)


def _call(m: Machine, name: str, arg: object) -> None:
    if name == "NEWOBJ_EX":
        m.pop()
    args, func = m.pop(), m.pop()
    m.call(func, args, name)


def _build(m: Machine, name: str, arg: object) -> None:
    state = m.pop()
    target = m.top()
    if not isinstance(target, Obj) or target.call is None:
        # BUILD on a value no allowed global made: CPython would set attributes on (or call
        # ``__setstate__`` of) something nothing vetted.
        if isinstance(target, Obj) and target.type is not None:
            m.refuse(f"BUILD on a plain {target.type.partition('.')[2]}")
        else:
            m.flag(f"BUILD on {kind(target)}, not an object made by an allowed global")
        return
    if not m.buildable(target):
        m.refuse(
            f"BUILD on the result of '{target.call}' (type '{target.type}'), which torch's "
            "BUILD does not accept"
        )
    elif target.type in _NO_DICT and truthy(state) is not False:
        # no __setstate__ and no __dict__: a non-empty state raises in torch and CPython alike
        m.refuse(f"BUILD with a state on a '{target.type}', which has no attributes to set")
    elif target.type == "collections.OrderedDict" and not _mapping_like(state):
        m.refuse("BUILD on an OrderedDict with a state that is not a mapping")
    m.attach(target, "", state)


_NO_DICT = frozenset({"builtins.set", "torch.Size", "builtins.frozenset", "builtins.complex"})


def _mapping_like(state: object) -> bool:
    """``__dict__.update(state)`` succeeds (as far as the machine can tell)."""
    k = kind_of(state)
    return (
        k == ""
        or k.startswith(("empty:", "full:builtins.dict", "full:collections"))
        or (k == "tuple" and not items_of(state))
    )


def _persid(m: Machine, name: str, arg: object) -> None:
    m.persid(m.pop())


def _pop(m: Machine, name: str, arg: object) -> None:
    if name == "POP" and len(m.stack) > (m.marks[-1] if m.marks else 0):
        m.stack.pop()
    else:
        m.pop_mark()


def _dup(m: Machine, name: str, arg: object) -> None:
    m.views.whole(bare_storages(m.top()))
    m.push(m.top())


def _proto(m: Machine, name: str, arg: object) -> None:
    if name == "PROTO" and isinstance(arg, int):
        m.protocol = arg


Handler = Callable[["Machine", str, object], None]
_FAMILIES: dict[Handler, str] = {
    _push_arg: "INT BININT BININT1 BININT2 LONG LONG1 LONG4 STRING BINSTRING SHORT_BINSTRING "
    "UNICODE BINUNICODE SHORT_BINUNICODE BINUNICODE8",
    _push_leaf: "NONE NEWTRUE NEWFALSE FLOAT BINFLOAT BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8",
    _put: "PUT BINPUT LONG_BINPUT MEMOIZE",
    _get: "GET BINGET LONG_BINGET",
    _mark: "MARK",
    _empty: "EMPTY_LIST EMPTY_DICT EMPTY_SET EMPTY_TUPLE",
    _tuple: "TUPLE TUPLE1 TUPLE2 TUPLE3",
    _build_container: "LIST DICT FROZENSET",
    _add: "APPEND APPENDS SETITEM SETITEMS ADDITEMS",
    _global: "GLOBAL STACK_GLOBAL",
    _call: "REDUCE NEWOBJ NEWOBJ_EX",
    _build: "BUILD",
    _persid: "BINPERSID",
    _pop: "POP POP_MARK",
    _dup: "DUP",
    _proto: "PROTO FRAME",
}

#: Opcodes a data-only pickle may use (STOP is handled by the caller); anything else is flagged.
OPS: dict[str, Handler] = {op: fn for fn, ops in _FAMILIES.items() for op in ops.split()}

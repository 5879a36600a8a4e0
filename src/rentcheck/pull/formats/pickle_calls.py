"""Which calls of allow-listed globals torch would finish, judged from the arguments' kinds.

torch's weights_only unpickler really calls an allowed global: ``torch.float32()`` (not
callable), ``OrderedDict(7)`` or ``torch.device("abc")`` raise, and the load fails. The
symbolic machine knows each argument's kind (int, str, None, bool, float, bytes, an empty or
filled container of a known type), which settles the common constructors exactly; anything it
cannot settle is assumed to succeed (the safety verdict never depends on this, only the
"torch will refuse" one).
"""

from __future__ import annotations

import re

from rentcheck.pull.formats.pickle_allowlist import ALLOWED_GLOBALS, STORAGE_DTYPES, TORCH_DTYPES

__all__ = [
    "DEVICE",
    "NEVER_CALLED",
    "NEW_WITHOUT_ARGS",
    "NON_CALLABLE",
    "Kind",
    "call_refusal",
    "kind_name",
]

#: Allow-listed globals that are values, not callables, in torch's allow-list: dtypes,
#: quantization schemes, and the typed storage classes (placeholders there: "'StorageType'
#: object is not callable").
NON_CALLABLE: frozenset[str] = frozenset(
    {f"torch.{name}" for name in TORCH_DTYPES}
    | {name for name in STORAGE_DTYPES if name != "torch.storage.UntypedStorage"}
    | {
        "torch.per_tensor_affine",
        "torch.per_channel_affine",
        "torch.per_tensor_symmetric",
        "torch.per_channel_symmetric",
        "torch.per_channel_affine_float_qparams",
    }
)
#: Allow-listed classes whose ``cls.__new__(cls)`` (torch's NEWOBJ with no arguments) succeeds
#: on any machine (a CUDA tensor type needs a GPU): read from torch 2.13 by trying each.
NEW_WITHOUT_ARGS: frozenset[str] = frozenset(
    {n for n in ALLOWED_GLOBALS if n.endswith("Tensor") and not n.startswith("torch.cuda.")}
    | {
        "builtins.bytearray",
        "builtins.complex",
        "builtins.set",
        "collections.Counter",
        "collections.OrderedDict",
        "torch.Size",
        "torch.nn.parameter.Parameter",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
    }
)
#: The names ``torch.serialization._get_layout`` finds (``str`` of each ``torch.layout``).
LAYOUTS = frozenset(
    f"torch.{name}"
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
                 "_mkldnn", "jagged")
)  # fmt: skip
#: Allow-listed classes torch.save never calls with REDUCE (they travel as arguments of the
#: rebuild helpers, or as persistent ids): torch's call of one with a file's arguments is not
#: proved to succeed (``torch.Tensor(t, ...)``, ``Parameter(*six)`` raise), so it is refused.
NEVER_CALLED: frozenset[str] = frozenset(
    name
    for name in ALLOWED_GLOBALS
    if name.endswith("Tensor")
    or name in ("torch.nn.parameter.Parameter", "torch.storage.TypedStorage")
    or name == "torch.storage.UntypedStorage"
)

# Kinds: "int", "str", "none", "bool", "float", "bytes", "empty:<type>", "full:<type>",
# "tuple", or "" when unknown.
Kind = str
DEVICE = re.compile(r"(cpu|cuda|meta|mps|xpu|hpu|xla|lazy|ipu|mtia|privateuseone)(:\d+)?")
_ITERABLE = ("str", "tuple", "bytes")
_REBUILDS = ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3")
_SCALARS = ("int", "str", "none", "bool", "float", "bytes")
#: (least, most) positional arguments of torch's rebuild helpers (torch 2.13's signatures).
_ARITY: dict[str, tuple[int, int]] = {
    f"torch._utils.{name}": counts
    for name, counts in {
        "_rebuild_device_tensor_from_cpu_tensor": (4, 4),
        "_rebuild_device_tensor_from_numpy": (4, 4),
        "_rebuild_meta_tensor_no_storage": (4, 4),
        "_rebuild_nested_tensor": (4, 4),
        "_rebuild_parameter": (3, 3),
        "_rebuild_parameter_with_state": (4, 4),
        "_rebuild_qtensor": (7, 7),
        "_rebuild_sparse_tensor": (2, 2),
        "_rebuild_tensor": (4, 4),
        "_rebuild_tensor_v2": (6, 7),
        "_rebuild_tensor_v3": (7, 8),
        "_rebuild_wrapper_subclass": (8, 8),
    }.items()
} | {
    "builtins.bytearray": (0, 3),
    "builtins.complex": (0, 2),
    "_codecs.encode": (1, 3),
    "torch.device": (1, 2),
    "torch._tensor._rebuild_from_type_v2": (4, 4),
    "torch.serialization._get_layout": (1, 1),
}
_NOT_INT = ("str", "none", "float", "bytes", "tuple")


def _iterable(kind: Kind) -> bool:
    return kind in _ITERABLE or kind.startswith(("empty:", "full:"))


def kind_name(kind: Kind) -> str:
    return kind.split(":", 1)[-1].removeprefix("builtins.") or "a value"


def call_refusal(func: str, args: list[Kind], strings: list[str | None]) -> str | None:
    """Why ``func(*args)`` raises, when the kinds settle it; None when it succeeds or may.

    ``strings`` holds the value of each ``str`` argument (None for the others).
    """
    if func in NON_CALLABLE:
        return f"'{func}' is a value, not a callable"
    if func in NEVER_CALLED:
        return f"'{func}' is called, which torch.save never writes (its arguments are not proved)"
    n = len(args)
    first = args[0] if args else ""
    if func in ("collections.OrderedDict", "collections.Counter"):
        # pickle writes OrderedDict() then its items, Counter(dict): a mapping or nothing
        if n > 1:
            return f"'{func}' takes at most one argument, not {n}"
        mapping = first.endswith(("builtins.dict", "OrderedDict", "Counter"))
        if n == 0 or mapping or first.startswith("empty:"):
            return None
        return f"'{func}' built from {kind_name(first)}, not a mapping (not proved to succeed)"
    if func in ("torch.Size", "builtins.set"):
        if n > 1:
            return f"'{func}' takes at most one argument, not {n}"
        if n == 0 or first == "" or first.startswith(("empty:", "full:")) or first == "tuple":
            return None
        if first == "str" and func == "builtins.set":
            return None
        return f"'{func}' cannot be built from {kind_name(first)}"
    arity = _ARITY.get(func)
    if arity is not None and not arity[0] <= n <= arity[1]:
        want = f"{arity[0]}" if arity[0] == arity[1] else f"{arity[0]} to {arity[1]}"
        return f"'{func}' takes {want} arguments, not {n}"
    if func in _REBUILDS and n >= 4:
        # tensor.set_(storage, offset, size, stride): sizes are sequences, the offset an int
        if args[1] in _NOT_INT:
            return f"'{func}' given {kind_name(args[1])} as the storage offset"
        for what, kind in (("size", args[2]), ("stride", args[3])):
            container = kind.startswith(("empty:", "full:"))
            if kind in _SCALARS or (container and kind_name(kind) not in ("list", "torch.Size")):
                return f"'{func}' given {kind_name(kind)} as the {what}, not a tuple"
        if n >= 5 and args[4] != "bool":  # torch.save writes NEWFALSE/NEWTRUE
            return f"'{func}' given {kind_name(args[4])} as requires_grad, not a bool"
    # pickle writes bytearray(str, 'latin-1') (protocol 2) or bytearray(bytes); a str without
    # an encoding, None or a float raise
    if func == "builtins.bytearray" and (first in ("none", "float") or (first == "str" and n < 2)):
        return f"'builtins.bytearray' cannot be built from {kind_name(first)} alone"
    if func == "builtins.complex" and any(k not in ("int", "float", "bool") for k in args):
        # pickle writes complex(real, imag) with two floats
        return "'builtins.complex' given something other than numbers"
    if func == "torch.serialization._get_layout" and (first != "str" or strings[0] not in LAYOUTS):
        return "'torch.serialization._get_layout' given no layout name torch knows"
    if func == "torch._utils._rebuild_sparse_tensor" and first != "full:torch.layout":
        return f"'{func}' given {kind_name(first)} where a layout goes"
    if func == "_codecs.encode" and first not in ("str", ""):
        return f"'_codecs.encode' encodes a str, not {kind_name(first)}"
    if func == "torch.device":
        if n == 0:
            return "'torch.device' needs a device"
        value = strings[0] if strings else None
        if first == "str" and value is not None and not DEVICE.fullmatch(value):
            return f"'torch.device' does not know the device {value[:40]!r}"
        if first != "str" or (n > 1 and args[1] != "int"):
            # pickle writes torch.device('cpu') or ('cuda', 0); a bare index needs a GPU
            return f"'torch.device' built from {kind_name(first)}, not a device name"
    return None

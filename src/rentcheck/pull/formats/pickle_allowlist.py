"""The globals a plain state dict (model, optimizer, scheduler, RNG state) needs, and nothing else.

Mirrors torch 2.13's ``weights_only`` allow-list, so a pickle this list accepts is one
``torch.load(weights_only=True)`` would also accept. Python 2 module names that protocol-2
pickles carry (``__builtin__``, ``copy_reg``) are mapped the way the unpickler maps them.
"""

from __future__ import annotations

import _compat_pickle

__all__ = [
    "ALLOWED_GLOBALS",
    "NUMPY_GLOBALS",
    "REBUILD_FUNCTIONS",
    "STORAGE_DTYPES",
    "TORCH_DTYPES",
    "normalize_global",
    "numpy_dtype_class",
]

# torch dtype name -> (bytes per element, finite-scan dtype or None)
TORCH_DTYPES: dict[str, tuple[int, str | None]] = {
    "float32": (4, "F32"),
    "float64": (8, "F64"),
    "float16": (2, "F16"),
    "bfloat16": (2, "BF16"),
    "complex32": (4, "F16"),
    "complex64": (8, "C64"),
    "complex128": (16, "C128"),
    "float8_e4m3fn": (1, "F8_E4M3"),
    "float8_e5m2": (1, "F8_E5M2"),
    "float8_e4m3fnuz": (1, "F8_E4M3FNUZ"),
    "float8_e5m2fnuz": (1, "F8_E5M2FNUZ"),
    "float8_e8m0fnu": (1, "F8_E8M0"),
    "float4_e2m1fn_x2": (1, None),
    "uint8": (1, None),
    "int8": (1, None),
    "int16": (2, None),
    "int32": (4, None),
    "int64": (8, None),
    "uint16": (2, None),
    "uint32": (4, None),
    "uint64": (8, None),
    "bool": (1, None),
    "qint8": (1, None),
    "quint8": (1, None),
    "qint32": (4, None),
    "quint4x2": (1, None),
    "quint2x4": (1, None),
    "bits8": (1, None),
    "bits16": (2, None),
    "bits1x8": (1, None),
    "bits2x4": (1, None),
    "bits4x2": (1, None),
    **{f"int{i}": (1, None) for i in range(1, 8)},
    **{f"uint{i}": (1, None) for i in range(1, 8)},
}

# storage class name -> torch dtype name of its elements (UntypedStorage counts bytes)
_STORAGE_CLASSES: dict[str, str] = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "QUInt8Storage": "quint8",
    "QInt8Storage": "qint8",
    "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
}

#: fully qualified storage global -> element dtype name
STORAGE_DTYPES: dict[str, str] = {
    **{f"torch.{cls}": dt for cls, dt in _STORAGE_CLASSES.items()},
    **{f"torch.cuda.{cls}": dt for cls, dt in _STORAGE_CLASSES.items() if "Q" not in cls},
    # torch.save names it by its module; weights_only allows only that spelling of the class
    "torch.storage.UntypedStorage": "uint8",
}

REBUILD_FUNCTIONS: frozenset[str] = frozenset(
    f"torch._utils.{name}"
    for name in (
        "_rebuild_tensor",
        "_rebuild_tensor_v2",
        "_rebuild_tensor_v3",
        "_rebuild_parameter",
        "_rebuild_parameter_with_state",
        "_rebuild_qtensor",
        "_rebuild_sparse_tensor",
        "_rebuild_meta_tensor_no_storage",
        "_rebuild_nested_tensor",
        "_rebuild_wrapper_subclass",
        "_rebuild_device_tensor_from_cpu_tensor",
        "_rebuild_device_tensor_from_numpy",
    )
)

_TENSOR_TYPES = (
    "Float",
    "Double",
    "Half",
    "BFloat16",
    "Long",
    "Int",
    "Short",
    "Char",
    "Byte",
    "Bool",
)

ALLOWED_GLOBALS: frozenset[str] = frozenset(
    {
        "collections.OrderedDict",
        "collections.Counter",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "torch._tensor._rebuild_from_type_v2",
        "torch.storage.TypedStorage",
        "_codecs.encode",
        "builtins.bytearray",
        "builtins.set",
        "builtins.complex",
        "torch.per_tensor_affine",
        "torch.per_channel_affine",
        "torch.per_tensor_symmetric",
        "torch.per_channel_symmetric",
        "torch.per_channel_affine_float_qparams",
        *REBUILD_FUNCTIONS,
        *STORAGE_DTYPES,
        *(f"torch.{name}" for name in TORCH_DTYPES),
        *(f"torch.{t}Tensor" for t in _TENSOR_TYPES),
        *(f"torch.cuda.{t}Tensor" for t in _TENSOR_TYPES),
        *(f"torch.sparse.{t}Tensor" for t in _TENSOR_TYPES if t != "Bool"),
        *(f"torch.cuda.sparse.{t}Tensor" for t in _TENSOR_TYPES if t != "Bool"),
    }
)

#: Opt-in (``extra_allowed``): numpy scalars and arrays that training loops often pickle into a
#: checkpoint (``np.float64`` metrics, ``np.random.get_state()``). torch rejects them by default.
NUMPY_GLOBALS: frozenset[str] = frozenset(
    {
        "numpy.core.multiarray.scalar",
        "numpy._core.multiarray.scalar",
        "numpy.core.multiarray._reconstruct",
        "numpy._core.multiarray._reconstruct",
        "numpy.ndarray",
        "numpy.dtype",
    }
)


def normalize_global(module: str, name: str) -> str:
    """``module.name`` as Python 3's unpickler resolves it (``fix_imports`` for Python 2 names)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"


_NUMPY_DTYPE_CLASSES = {
    "b1": "Bool",
    "i1": "Int8",
    "u1": "UInt8",
    "i2": "Int16",
    "u2": "UInt16",
    "i4": "Int32",
    "u4": "UInt32",
    "i8": "Int64",
    "u8": "UInt64",
    "f2": "Float16",
    "f4": "Float32",
    "f8": "Float64",
    "c8": "Complex64",
    "c16": "Complex128",
    "O8": "Object",
}


def numpy_dtype_class(code: str) -> str:
    """The class of ``numpy.dtype(code)`` in numpy 2 (``'u4'`` -> ``numpy.dtypes.UInt32DType``):
    the type torch's BUILD checks, so it must be allow-listed to load a pickled dtype."""
    short = code.lstrip("<>=|")
    return f"numpy.dtypes.{_NUMPY_DTYPE_CLASSES.get(short, short)}DType"

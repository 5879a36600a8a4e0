"""Value classes declared like dataclasses, for the modules every ``rentcheck check`` imports.

``dataclasses`` imports ``inspect`` (and with it ast, dis and tokenize) and writes about six
methods per class with ``exec``. A record declares its fields the same way (annotations,
defaults, ``field(default_factory=...)``), gets one generated ``__init__`` and shares
``__eq__``, ``__hash__`` and ``__repr__``; type checkers treat it as a dataclass (PEP 681).

The rule (held by ``tests/test_record.py``): a module declares records only if a warm
``rentcheck check`` imports it or it is under ``lint/`` (the CLI's, config's, model's, the
gate table's and judge's, the report's, the registry's); every other module declares
dataclasses; no module declares both. ``replace`` here takes either kind.

Measured again for the gate-pipeline issue (2026-12, CPU time, median and best of 21 on a
shared 2-core machine): ``import dataclasses`` costs 10.8 ms (best 7.5) after the CLI's own
imports, against 117 ms (best 99) for a whole warm ``rentcheck check`` of a two-file project:
a tenth of it, so the lint path's value types stay records.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
else:

    def dataclass_transform(**_markers):
        """PEP 681's marker (typing has it from 3.11): only type checkers read it."""
        return lambda decorated: decorated


__all__ = ["FrozenInstanceError", "field", "field_names", "record", "replace"]

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("compare", "default", "factory", "name", "repr")

    def __init__(self, default: Any, factory: Any, repr_: bool, compare: bool) -> None:
        self.name = ""
        self.default = default
        self.factory = factory
        self.repr = repr_
        self.compare = compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] = _MISSING,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field's default, or factory of defaults, and whether repr/eq look at it."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("a field has a default or a default_factory, not both")
    return _Field(default, default_factory, repr, compare)


def field_names(record_or_class: Any) -> tuple[str, ...]:
    """The field names, in order."""
    return tuple(f.name for f in record_or_class.__record_fields__)


def replace(instance: _T, **changes: Any) -> _T:
    """A copy of ``instance`` with some fields changed, a record or a dataclass alike: a module
    that handles both (a gate changing a ``Finding``) calls this one function."""
    specs = getattr(type(instance), "__record_fields__", None)
    if specs is None:
        import dataclasses  # off the lint path: whoever holds a dataclass has loaded it

        plain: Any = instance
        return dataclasses.replace(plain, **changes)  # type: ignore[no-any-return]
    values = {f.name: getattr(instance, f.name) for f in specs}
    values.update(changes)
    return type(instance)(**values)


def _collect(cls: type) -> tuple[_Field, ...]:
    found: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for inherited in getattr(base, "__record_fields__", ()):
            found[inherited.name] = inherited
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - this class's own, as strings
    for name, annotation in own.items():
        if "ClassVar" in str(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, (list, dict, set)):
            raise ValueError(
                f"{cls.__name__}.{name}: mutable default; use field(default_factory=...)"
            )
        spec = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True)
        spec.name = name
        found[name] = spec  # a field redeclared by a subclass keeps its place, as in dataclasses
        if isinstance(value, _Field):  # the class attribute was only a declaration
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
    return tuple(found.values())


def _init(cls: type, specs: tuple[_Field, ...], frozen: bool) -> Callable[..., None]:
    """One ``__init__`` written for the class, as fast to call as a dataclass's."""
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params: list[str] = []
    body: list[str] = []
    seen_default = False
    for spec in specs:
        name = spec.name
        value = name
        if spec.factory is not _MISSING:
            namespace[f"_factory_{name}"] = spec.factory
            params.append(f"{name}=_MISSING")
            value = f"_factory_{name}() if {name} is _MISSING else {name}"
            seen_default = True
        elif spec.default is not _MISSING:
            namespace[f"_default_{name}"] = spec.default
            params.append(f"{name}=_default_{name}")
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with")
        else:
            params.append(name)
        body.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, namespace)  # noqa: S102 - generated from field names, as dataclasses does
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _compared(instance: Any) -> tuple[Any, ...]:
    return tuple(getattr(instance, name) for name in instance.__record_compare__)


def _eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _refuse_set(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _refuse_delete(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _make(cls: type[_T], frozen: bool) -> type[_T]:
    for base in cls.__mro__[1:]:
        if "__record_frozen__" in base.__dict__ and base.__dict__["__record_frozen__"] != frozen:
            raise TypeError(f"{cls.__name__}: a record cannot mix frozen and mutable bases")
    if frozen and ("__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__):
        raise TypeError(f"{cls.__name__}: a frozen record cannot define __setattr__/__delattr__")
    specs = _collect(cls)
    added: dict[str, Any] = {
        "__record_frozen__": frozen,
        "__record_fields__": specs,
        "__record_compare__": tuple(f.name for f in specs if f.compare),
        "__init__": _init(cls, specs, frozen),
    }
    if "__repr__" not in cls.__dict__:
        added["__repr__"] = _repr
    if "__eq__" not in cls.__dict__:
        added["__eq__"] = _eq
    if frozen:
        added.update(__setattr__=_refuse_set, __delattr__=_refuse_delete)
        # Keep a __hash__ the class wrote (not the None Python sets when it defines __eq__).
        own_hash = cls.__dict__.get("__hash__", _MISSING)
        if own_hash is _MISSING or (own_hash is None and "__eq__" in cls.__dict__):
            added["__hash__"] = _hash
    elif "__hash__" not in cls.__dict__:
        added["__hash__"] = None  # mutable and compared by value: not hashable
    for name, value in added.items():
        setattr(cls, name, value)
    return cls


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = True) -> Any:
    """``@record`` (frozen, like ``@dataclass(frozen=True)``) or ``@record(frozen=False)``."""
    if cls is None:
        return lambda later: _make(later, frozen)
    return _make(cls, frozen)

"""Regular expressions compiled on first use.

Every lint run imports every rule module, but only a run that checks a file (not one answered
from the findings cache) uses the rules' expressions; compiling them at import cost more than
a tenth of a cached run's start-up (measured 2026-12: the 21 patterns compile in 14.7 ms,
against about 50 ms for a whole warm ``rentcheck check``). ``lazy_regex`` stands in for
``re.compile``.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any, AnyStr

__all__ = ["lazy_regex"]

# What callers use; bound onto the object at the first use, so later calls go straight to
# the compiled pattern's methods.
_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _Deferred:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_source":  # copy/pickle probing a bare instance
            raise AttributeError(name)
        pattern, flags = self._source
        compiled: Any = re.compile(pattern, flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)  # pattern, flags, groups, ... as the compiled one says

    def __reduce__(self) -> tuple[Any, tuple[str | bytes, int]]:
        return lazy_regex, self._source

    def __repr__(self) -> str:
        return f"lazy_regex({self._source[0]!r}, {self._source[1]})"


def lazy_regex(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return _Deferred(pattern, flags)  # type: ignore[return-value]

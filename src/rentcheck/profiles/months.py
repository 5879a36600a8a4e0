"""Calendar months as the staleness linter counts them: whole months, no days.

A stamp ``verified 2026-03`` with a six-month limit is fresh through the end of 2026-09 and
stale from 2026-10: its age is ``today - stamp`` in months and it is stale when that exceeds
the limit. ``RENTCHECK_TODAY`` (or ``--today``) pins "today" so results are reproducible.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rentcheck.errors import UsageError

__all__ = ["Month", "effective_today"]

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, order=True)
class Month:
    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> Month | None:
        """``YYYY-MM`` with a real month (01-12), else None."""
        match = _MONTH_RE.match(text.strip())
        if not match:
            return None
        year, month = int(match.group(1)), int(match.group(2))
        return cls(year, month) if 1 <= month <= 12 else None

    @property
    def index(self) -> int:
        return self.year * 12 + self.month - 1

    def __sub__(self, other: Month) -> int:
        """Whole months from ``other`` to ``self``."""
        return self.index - other.index

    def plus(self, months: int) -> Month:
        index = self.index + months
        return Month(index // 12, index % 12 + 1)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def effective_today(given: str | None, env: Mapping[str, str] | None = None) -> Month:
    """``--today`` if given, else ``RENTCHECK_TODAY``, else the system clock (UTC)."""
    env = os.environ if env is None else env
    for text, where in ((given, "--today"), (env.get("RENTCHECK_TODAY"), "RENTCHECK_TODAY")):
        if text:
            month = Month.parse(text)
            if month is None:
                raise UsageError(
                    f"{where} is {text!r}, not a month", hint="write it as YYYY-MM, e.g. 2026-11"
                )
            return month
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc)
    return Month(now.year, now.month)

"""Month arithmetic and the effective "today" (argument > RENTCHECK_TODAY > clock)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rentcheck.errors import UsageError
from rentcheck.profiles.document import parse_markdown
from rentcheck.profiles.months import Month, effective_today
from rentcheck.profiles.stale import StaleSettings, stamp_status
from rentcheck.profiles.stamps import find_stamps

months = st.builds(Month, st.integers(1900, 2200), st.integers(1, 12))


@given(months, st.integers(-3000, 3000))
def test_plus_and_minus_are_inverse(month: Month, delta: int) -> None:
    assert month.plus(delta) - month == delta
    assert Month.parse(str(month)) == month


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "2026-6", "26-06", "June 2026", ""])
def test_parse_refuses_what_is_not_a_month(text: str) -> None:
    assert Month.parse(text) is None


@pytest.mark.parametrize(
    ("today", "status"),
    [
        ("2026-03", "fresh"),
        ("2026-08", "fresh"),
        ("2026-09", "stale-soon"),  # the last fresh month warns
        ("2026-10", "stale"),  # the documented boundary: stale from 2026-10
        ("2026-02", "future"),
    ],
)
def test_documented_boundary_of_a_2026_03_stamp(today: str, status: str) -> None:
    (stamp,) = find_stamps(parse_markdown("(verified acme 2026-03)\n"))
    month = Month.parse(today)
    assert month is not None
    assert stamp_status(stamp, StaleSettings(today=month)) == status


def test_warn_months_zero_never_warns() -> None:
    (stamp,) = find_stamps(parse_markdown("(verified acme 2026-03)\n"))
    settings = StaleSettings(today=Month(2026, 9), warn_months=0)
    assert stamp_status(stamp, settings) == "fresh"


def test_today_comes_from_the_argument_then_the_environment_then_the_clock() -> None:
    assert effective_today("2026-11", {"RENTCHECK_TODAY": "2020-01"}) == Month(2026, 11)
    assert effective_today(None, {"RENTCHECK_TODAY": "2020-01"}) == Month(2020, 1)
    now = datetime.datetime.now(datetime.timezone.utc)
    assert effective_today(None, {}) in (
        Month(now.year, now.month),
        Month(now.year, now.month).plus(1),
    )


@pytest.mark.parametrize(("given", "env"), [("2026-13", {}), (None, {"RENTCHECK_TODAY": "soon"})])
def test_bad_today_is_a_usage_error_naming_its_origin(
    given: str | None, env: dict[str, str]
) -> None:
    with pytest.raises(UsageError, match="--today" if given else "RENTCHECK_TODAY"):
        effective_today(given, env)

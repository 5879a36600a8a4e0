"""The exception tree: one-line messages with their hint, intact across processes."""

from __future__ import annotations

import pickle

import pytest

from rentcheck.errors import ConfigError, HostKeyError, RentcheckError, UsageError


def test_the_hint_follows_the_message_on_one_line() -> None:
    assert str(UsageError("bad path", hint="pass a file")) == "bad path (pass a file)"
    assert str(ConfigError("bad key")) == "bad key"


@pytest.mark.parametrize(
    "error",
    [UsageError("bad path", hint="pass a file"), ConfigError("bad key"), HostKeyError("x", "y")],
)
def test_errors_keep_their_type_and_hint_through_pickle(error: RentcheckError) -> None:
    """A lint worker process sends its exception to the parent pickled; the hint is not in
    ``args``, so it must come back from the instance's state."""
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
    assert type(copy) is type(error) and str(copy) == str(error)
    assert (copy.message, copy.hint) == (error.message, error.hint)

"""The one exception tree of rentcheck.

Findings are data, not exceptions: a check that finds a problem returns a Finding and the exit
code becomes 1. Exceptions are for runs that could not be judged at all; the CLI maps every
``RentcheckError`` to exit code 2 and prints ``str(error)`` as one line.

    RentcheckError              anything rentcheck could not do; .hint says how to fix it
    ├── UsageError              bad command-line arguments or paths
    ├── ConfigError             bad [tool.rentcheck] / rentcheck.yaml / RENTCHECK_* value
    ├── FormatError             a file that rentcheck must parse is malformed
    ├── GateError               a gate cannot run (missing prerequisite, refused action)
    └── RemoteError             talking to a box failed
        ├── HostKeyError        unknown or changed host key
        ├── ConnectError        cannot connect / authenticate
        └── RemoteTimeout       a remote command ran past its limit
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConnectError",
    "FormatError",
    "GateError",
    "HostKeyError",
    "RemoteError",
    "RemoteTimeout",
    "RentcheckError",
    "UsageError",
]


class RentcheckError(Exception):
    """Base class; ``hint`` is the fix, shown after the message on the same line."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(RentcheckError):
    """Bad arguments or paths on the command line."""


class ConfigError(RentcheckError):
    """A configuration value, key or code that rentcheck does not accept."""


class FormatError(RentcheckError):
    """Input that must follow a format (manifest, checkpoint, profile) does not."""


class GateError(RentcheckError):
    """A gate cannot run at all."""


class RemoteError(RentcheckError):
    """Talking to a box failed."""


class HostKeyError(RemoteError):
    """The box's host key is unknown or changed."""


class ConnectError(RemoteError):
    """The box could not be reached or refused authentication."""


class RemoteTimeout(RemoteError):
    """A remote command ran past its limit and was killed."""

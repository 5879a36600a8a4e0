"""An sbatch script read the way sbatch reads it: ``#SBATCH`` directives up to the first
command, then the shell body. Pure: text in, a ``BatchScript`` out."""

from __future__ import annotations

import re
import shlex
import signal
from dataclasses import dataclass, field

__all__ = ["BatchScript", "Directive", "SignalSpec", "parse_script", "parse_signal", "parse_time"]

# sbatch's long options that take a value, with their short forms (the ones the rules read).
_SHORT = {"-t": "--time", "-p": "--partition", "-q": "--qos"}
_FLAGS = frozenset({"--requeue", "--no-requeue"})


@dataclass(frozen=True)
class Directive:
    line: int
    option: str  # the long form, e.g. "--time"
    value: str | None


@dataclass(frozen=True)
class SignalSpec:
    batch_shell: bool  # the "B:" prefix: only the batch shell is signalled
    name: str  # "USR1", normalised from "SIGUSR1" or "10"
    lead_seconds: int  # sig_time; sbatch's default is 60


@dataclass
class BatchScript:
    lines: list[str]
    directives: list[Directive] = field(default_factory=list)
    # #SBATCH lines after the first command: sbatch ignores them.
    late_directives: list[int] = field(default_factory=list)
    body_start: int = 0  # 0-based index of the first command line

    def option(self, name: str) -> Directive | None:
        """The last directive for ``name`` (a later option overrides an earlier one)."""
        found = [d for d in self.directives if d.option == name]
        return found[-1] if found else None

    def body(self) -> list[tuple[int, str]]:
        """(1-based line, text) of every line from the first command on."""
        return [(i + 1, text) for i, text in enumerate(self.lines) if i >= self.body_start]


def _options(words: list[str], line: int) -> list[Directive]:
    found: list[Directive] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if not eq and name not in _FLAGS and i < len(words) and not words[i].startswith("-"):
                value, i = words[i], i + 1
            found.append(Directive(line, name, value if (eq or value) else None))
        elif word[:2] in _SHORT:
            value = word[2:] or (words[i] if i < len(words) else "")
            i += 0 if word[2:] else 1
            found.append(Directive(line, _SHORT[word[:2]], value))
    return found


def parse_script(text: str) -> BatchScript:
    lines = text.splitlines()
    script = BatchScript(lines=lines, body_start=len(lines))
    in_header = True
    for index, raw in enumerate(lines):
        stripped = raw.strip()
        if stripped.startswith("#SBATCH"):
            if not in_header:
                script.late_directives.append(index + 1)
                continue
            try:
                words = shlex.split(stripped[len("#SBATCH") :], comments=True)
            except ValueError:
                continue
            script.directives.extend(_options(words, index + 1))
        elif in_header and stripped and not stripped.startswith("#"):
            # sbatch stops reading directives at the first non-comment, non-blank line.
            in_header = False
            script.body_start = index
    return script


_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time(value: str) -> int | None:
    """Seconds of an sbatch ``--time``: "minutes", "minutes:seconds", "hours:minutes:seconds",
    "days-hours", "days-hours:minutes", "days-hours:minutes:seconds". None for UNLIMITED or
    a value sbatch would reject."""
    match = _TIME_RE.match(value.strip())
    if match is None:
        return None
    days, first, second, third = match.groups()
    if days is not None:  # days-hours[:minutes[:seconds]]
        return int(days) * 86400 + int(first) * 3600 + int(second or 0) * 60 + int(third or 0)
    if third is not None:  # hours:minutes:seconds
        return int(first) * 3600 + int(second) * 60 + int(third)
    if second is not None:  # minutes:seconds
        return int(first) * 60 + int(second)
    return int(first) * 60  # minutes


def signal_name(text: str) -> str | None:
    """``USR1``, ``SIGUSR1`` and ``10`` (Linux numbering) all name SIGUSR1."""
    word = text.strip().upper()
    if word.isdigit():
        try:
            return signal.Signals(int(word)).name.removeprefix("SIG")
        except ValueError:
            return None
    return word.removeprefix("SIG") or None


def parse_signal(value: str) -> SignalSpec | None:
    """``--signal=[{R|B}:]<sig_num>[@sig_time]``."""
    flags, colon, rest = value.partition(":")
    if not colon:
        flags, rest = "", value
    num, at, lead = rest.partition("@")
    name = signal_name(num)
    if name is None or (at and not lead.strip().isdigit()):
        return None
    return SignalSpec("B" in flags.upper(), name, int(lead) if at else 60)

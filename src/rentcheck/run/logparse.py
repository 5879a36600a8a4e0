"""Reading a training log: per-step loss lines, non-finite losses, the last Python traceback.

Step patterns are regexes with named groups: ``loss`` and/or ``step`` (global optimizer step),
optionally ``epoch`` and ``total`` when the step counter restarts every epoch (Lightning's
progress bar: global step = epoch * batches per epoch + step, where batches per epoch is the
largest total seen: a ``max_steps``-truncated last epoch shows a smaller one). The first
pattern that matches any line of a log is the one used for that log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_DIGEST_PATTERNS",
    "DEFAULT_STEP_PATTERNS",
    "StepRecord",
    "Traceback",
    "compile_patterns",
    "epoch_size",
    "last_traceback",
    "nonfinite_loss_lines",
    "parse_steps",
    "strip_ansi",
]

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)"
DEFAULT_STEP_PATTERNS: tuple[str, ...] = (
    # Plain scripts, examples/tinytrain, torchtitan (`step:  1  loss: 10.89`), "step 3 | loss 2.1".
    rf"(?i)\bstep[\s=:]*(?P<step>\d+)\b[^\n]*?\bloss[\s=:|]*(?P<loss>{_NUMBER})",
    # HF Trainer with --logging_steps 1: {'loss': 1.2345, 'grad_norm': ..., 'epoch': 0.01}
    rf"\{{'loss': '?(?P<loss>{_NUMBER})",
    # Lightning's progress bar: "Epoch 0:  40%|####  | 2/5 [00:01<00:01, ..., train_loss=1.23]"
    r"Epoch (?P<epoch>\d+):[^|]*\|[^|]*\|\s*(?P<step>\d+)/(?P<total>\d+) "
    rf"\[[^\]]*?\b\w*loss\w*=(?P<loss>{_NUMBER})",
)
# The run's own digest of its final weights, if it prints one (examples/tinytrain does).
DEFAULT_DIGEST_PATTERNS: tuple[str, ...] = (r"\bweights_sha256=(?P<digest>[0-9a-f]{64})\b",)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NONFINITE = re.compile(
    r"(?i)\b\w*loss\w*['\"]?\s*[=:]\s*['\"]?[-+]?(?:nan|inf(?:inity)?)\b(?![\w.])"
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line)


def compile_patterns(patterns: Iterable[str], what: str = "step") -> tuple[re.Pattern[str], ...]:
    """Compile and check the named groups; raises ValueError with the reason."""
    compiled = []
    for text in patterns:
        pattern = re.compile(text)
        groups = set(pattern.groupindex)
        needed = {"step", "loss"} if what == "step" else {"digest"}
        if not groups & needed:
            raise ValueError(
                f"pattern {text!r} has none of the named groups "
                + ", ".join(f"(?P<{g}>...)" for g in sorted(needed))
            )
        compiled.append(pattern)
    return tuple(compiled)


@dataclass(frozen=True)
class StepRecord:
    step: int | None  # None when the pattern has no step group: position in the log counts
    loss: str | None


def _record(match: re.Match[str], epoch_size: int) -> StepRecord:
    groups = match.groupdict()
    step = int(groups["step"]) if groups.get("step") else None
    if step is not None and groups.get("epoch") and groups.get("total"):
        step += int(groups["epoch"]) * max(epoch_size, int(groups["total"]))
    return StepRecord(step=step, loss=groups.get("loss"))


def epoch_size(lines: Sequence[str], pattern: re.Pattern[str]) -> int:
    """The largest per-epoch total a progress-bar pattern finds (0 without a total group)."""
    if "total" not in pattern.groupindex:
        return 0
    totals = [int(m["total"]) for m in map(pattern.search, map(strip_ansi, lines)) if m]
    return max(totals, default=0)


def parse_steps(
    lines: Sequence[str],
    patterns: Sequence[re.Pattern[str]],
    only: int | None = None,
    known_epoch_size: int = 0,
) -> tuple[int | None, list[StepRecord]]:
    """(index of the pattern used, one record per step, in log order).

    A step printed twice (a progress bar redrawn) keeps its last value. ``known_epoch_size``
    (from the uninterrupted run) covers a relaunch log that only shows a truncated epoch.
    """
    candidates = [only] if only is not None else range(len(patterns))
    for index in candidates:
        pattern = patterns[index]
        size = max(known_epoch_size, epoch_size(lines, pattern))
        records: list[StepRecord] = []
        position: dict[int, int] = {}
        for line in lines:
            match = pattern.search(strip_ansi(line))
            if not match:
                continue
            record = _record(match, size)
            if record.step is not None and record.step in position:
                records[position[record.step]] = record
                continue
            if record.step is not None:
                position[record.step] = len(records)
            records.append(record)
        if records:
            return index, records
    return None, []


def find_digest(lines: Sequence[str], patterns: Sequence[re.Pattern[str]]) -> str | None:
    """The last digest any pattern finds in the log."""
    found = None
    for line in lines:
        for pattern in patterns:
            match = pattern.search(strip_ansi(line))
            if match:
                found = match.group("digest")
    return found


def nonfinite_loss_lines(lines: Iterable[str]) -> list[str]:
    return [line for line in lines if _NONFINITE.search(strip_ansi(line))]


@dataclass(frozen=True)
class Traceback:
    frames: tuple[tuple[str, int, str], ...]  # (file, line, function), outermost first
    exception: str  # "ModuleNotFoundError: No module named 'x'"

    @property
    def exception_type(self) -> str:
        head = self.exception.split(":", 1)[0].strip()
        return head.rsplit(".", 1)[-1]


def last_traceback(lines: Sequence[str]) -> Traceback | None:
    """The last Python traceback in the log (the one that ended the run, usually)."""
    start = None
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("Traceback (most recent call last):"):
            start = index
            break
    if start is None:
        return None
    frames: list[tuple[str, int, str]] = []
    exception = ""
    for line in lines[start + 1 :]:
        frame = _FRAME.match(line)
        if frame:
            frames.append((frame["file"], int(frame["line"]), frame["func"]))
            continue
        if line.startswith((" ", "\t")) or not line.strip():
            continue  # source lines, carets, notes
        exception = line.strip()
        break
    return Traceback(frames=tuple(frames), exception=exception)

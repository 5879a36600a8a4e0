"""Run one training command under supervision: CPU-only env block, optional step shim, new
process group, timeout, kill on a trigger, group kill after exit, combined output drained.

The group kill matters: DataLoader workers keep the output pipe open for seconds after the
main process is gone, so the supervisor waits on the main PID, kills its group, then drains.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from rentcheck.errors import GateError
from rentcheck.payload import SHIM_DIR

__all__ = [
    "Launch",
    "ProcessResult",
    "ShimEvents",
    "cpu_env_block",
    "keep_log",
    "redacted",
    "reproduce_line",
    "supervise",
]

SHIM_PREFIX = "RENTCHECK_SHIM_"
MAX_LINES = 100_000
TERM_GRACE_S = 5.0
_LINE_BREAK = re.compile(rb"\r\n|\n|\r")

# Returns the signal to send to the run's group now, or None.
Trigger = Callable[["ShimEvents", Sequence[str]], "int | None"]


class Started(Protocol):
    """A started run as ``supervise`` uses it: a ``Popen``, or a fork server's child."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None

    def wait(self, timeout: float | None = None) -> int: ...


def cpu_env_block(offline: bool, workdir: str) -> dict[str, str]:
    """Forces CPU and silences trackers; each entry can be overridden by the user's ``env``."""
    block = {
        "CUDA_VISIBLE_DEVICES": "",
        "HIP_VISIBLE_DEVICES": "",
        "ACCELERATE_USE_CPU": "true",
        "WANDB_MODE": "disabled",
        "WANDB_DISABLED": "true",
        "WANDB_SILENT": "true",
        "DISABLE_MLFLOW_INTEGRATION": "TRUE",
        # Code that calls mlflow directly logs into the sandbox (the cwd), not to a server.
        "MLFLOW_TRACKING_URI": "./mlruns",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }
    if offline:
        block.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return block


@dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]  # what rentcheck sets on top of the inherited environment
    timeout: float
    shim: bool  # put the step shim on PYTHONPATH
    shim_settings: Mapping[str, str] = field(default_factory=dict)  # RENTCHECK_SHIM_* minus files
    state_dir: str = ""  # rentcheck's own files for this run (shim report, release flag)
    name: str = "run"
    # A run the shim sees still stepping at ``timeout`` may go on for as long as its measured
    # pace needs to reach its stop (``RENTCHECK_SHIM_STOP_AFTER``), up to ``stretch`` times
    # ``timeout`` (1: a hard limit).
    stretch: float = 1.0
    path_prefix: str = ""  # the project environment's bin dir, first on PATH (as `activate`)
    # (scratch copy root, user's project root, user's dir): the reproduce line runs there.
    origin: tuple[str, str, str] | None = None
    # Starts the run instead of a new process (a fork server's ``spawn``, see forking.py).
    spawn: Callable[[Launch], Started] | None = field(default=None, compare=False, repr=False)

    def full_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(SHIM_PREFIX)}
        if self.path_prefix:
            env["PATH"] = self.path_prefix + os.pathsep + env.get("PATH", os.defpath)
        env.update(self.env)
        if self.shim:
            inherited = env.get("PYTHONPATH", "")
            env["PYTHONPATH"] = SHIM_DIR + (os.pathsep + inherited if inherited else "")
            env.update(self.shim_settings)
            env[SHIM_PREFIX + "REPORT"] = self.report_path
            env[SHIM_PREFIX + "RELEASE"] = self.release_path
        return env

    @property
    def report_path(self) -> str:
        return os.path.join(self.state_dir, f"{self.name}.shim.jsonl")

    @property
    def release_path(self) -> str:
        return os.path.join(self.state_dir, f"{self.name}.release")


_SECRET_NAME = re.compile(
    r"(?i)(?:^|_)(?:token|secret|password|passwd|api_?key|access_?key|credentials?|auth)(?:_|$)"
)


def redacted(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for reports: values of secret-looking names are replaced by ``$NAME``."""
    return {k: f"${k}" if _SECRET_NAME.search(k) else v for k, v in env.items()}


def reproduce_line(launch: Launch) -> str:
    """A shell line that reruns the command like rentcheck did, from the user's own directory
    (in the project, not in rentcheck's scratch copy of it).

    Secret-looking variables are passed as ``NAME="$NAME"``, never with their value.
    """
    scratch, origin, cwd = launch.origin or ("", "", "")

    def place(text: str) -> str:
        return text.replace(scratch, origin) if scratch else text

    shown = {k: place(v) for k, v in launch.env.items()}
    if launch.shim:
        shown["PYTHONPATH"] = launch.full_env()["PYTHONPATH"]
        shown.update(launch.shim_settings)

    def assign(key: str, value: str) -> str:
        return f'{key}="${key}"' if _SECRET_NAME.search(key) else f"{key}={shlex.quote(value)}"

    assignments = " ".join(assign(k, v) for k, v in sorted(shown.items()))
    if launch.path_prefix:
        assignments += f' PATH={shlex.quote(launch.path_prefix)}:"$PATH"'
    command = " ".join(shlex.quote(place(a)) for a in launch.argv)
    where = shlex.quote(cwd) if cwd else '"$(mktemp -d)"'
    return f"cd {where} && env {assignments} {command}"


class ShimEvents:
    """The shim's JSON lines, read incrementally while the run is alive."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._offset = 0
        self._partial = b""

    def read_new(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        self._offset += len(data)
        chunks = (self._partial + data).split(b"\n")
        self._partial = chunks.pop()
        new = []
        for chunk in chunks:
            with contextlib.suppress(ValueError):
                event = json.loads(chunk)
                if isinstance(event, dict):
                    new.append(event)
        self.events.extend(new)
        return new


@dataclass
class ProcessResult:
    launch: Launch
    returncode: int | None
    timed_out: bool
    sent_signal: int | None  # the signal rentcheck sent on a trigger, if it did
    lines: list[str]
    duration: float
    events: list[dict[str, Any]]
    dropped_lines: int = 0
    forked: bool = False  # started as a fork of a warmed interpreter, not a new process
    ended_at: float = 0.0  # time.monotonic() when the main process ended or the limit hit
    limit_s: float = 0.0  # the time limit it ran under (``timeout``, or stretched)
    # At the limit: the CPU seconds the training process (the shim's) had used (None: unknown)
    cpu_at_limit: float | None = None
    started_at: float = 0.0  # time.monotonic() when it was started

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def keep_log(result: ProcessResult, path: str) -> None:
    """The run's combined output, written next to the outputs that are kept for inspection."""
    from rentcheck.atomic import write_atomic

    text = "".join(line + "\n" for line in result.lines)
    if result.dropped_lines:
        text = f"[{result.dropped_lines} lines dropped from the middle]\n" + text
    write_atomic(path, text.encode("utf-8", "replace"))


def _pump(fd: int, lines: list[str], dropped: list[int]) -> None:
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        parts = _LINE_BREAK.split(pending + chunk)
        pending = parts.pop()
        lines.extend(p.decode("utf-8", "replace") for p in parts)
        if len(lines) > MAX_LINES:
            # Keep the head (tracebacks at start-up) and the tail (the last steps).
            excess = len(lines) - MAX_LINES // 2
            del lines[1000 : 1000 + excess]
            dropped[0] += excess
    if pending:
        lines.append(pending.decode("utf-8", "replace"))


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _start(launch: Launch) -> Started:
    try:
        if launch.spawn is not None:
            with contextlib.suppress(OSError, EOFError):  # else: a new process, as always
                return launch.spawn(launch)
        return subprocess.Popen(
            list(launch.argv),
            cwd=launch.cwd,
            env=launch.full_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise GateError(
            f"cannot start {launch.argv[0]!r}: {exc.strerror or exc}",
            hint="check `command` in [tool.rentcheck.smoke]/[tool.rentcheck.resume] (it runs "
            "in a copy of the project, from the directory you ran rentcheck in)",
        ) from exc


def _wait(
    proc: Started,
    launch: Launch,
    trigger: Trigger | None,
    *,
    deadline: list[float],
    shim: ShimEvents,
    lines: list[str],
    poll_s: float,
) -> tuple[bool, int | None]:
    """Wait for the main process; returns (timed out, signal sent on the trigger).
    ``deadline`` holds [the limit now, the most it may be stretched to, the start]."""
    sent: int | None = None
    while proc.returncode is None:
        remaining = deadline[0] - time.monotonic()
        if remaining <= 0:
            later = _stretched(launch, shim, deadline) if launch.shim else None
            if later is None:
                return True, sent
            deadline[0] = later
            continue
        # Without a pending trigger there is nothing to poll for: block on the PID.
        timeout = remaining if trigger is None or sent is not None else poll_s
        _block(proc, timeout)
        if proc.returncode is None and trigger is not None and sent is None:
            shim.read_new()
            sent = trigger(shim, lines)
            if sent is not None:
                _signal_group(proc.pid, sent)
                if launch.shim and sent != signal.SIGKILL:
                    # A program that handles SIGTERM must be able to go on and save.
                    with open(launch.release_path, "w", encoding="utf-8"):
                        pass
    return False, sent


def _block(proc: Started, timeout: float) -> None:
    """Wait up to ``timeout`` for the main process to end, returning as it ends: on a pidfd
    where Linux has one (``Popen.wait(timeout)`` polls, with sleeps of up to 50 ms between
    polls: a fixed cost after every run that a plain run of the command does not pay)."""
    pidfd = None
    popen = proc if isinstance(proc, subprocess.Popen) else None
    # A trigger's short polls (5 ms) keep Popen.wait: a pidfd per poll would cost more.
    if popen is not None and timeout > 0.05 and hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(popen.pid)
    if popen is None or pidfd is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        return
    try:
        select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    popen.poll()


def _training_cpu(shim: ShimEvents) -> float | None:
    """CPU seconds (all threads) used so far by the process the shim saw train (Linux /proc),
    read before the limit's SIGTERM: a run that works between steps is told from a hang."""
    from rentcheck.run.shimreport import main_pid

    shim.read_new()
    pid = main_pid(shim.events)
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        # After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


STRETCH_MARGIN = 1.5  # a stretched limit gives the measured pace this much room


def _stretched(launch: Launch, shim: ShimEvents, limits: list[float]) -> float | None:
    """A later limit (``limits``: [now's, the cap, the start]) for a run still stepping whose
    pace reaches its stop before the cap, or for one working between two steps (an
    evaluation, a sample: another ``timeout``, up to the cap); None: the limit stands."""
    from rentcheck.run.shimreport import BUSY_FRACTION, busy, pace, still_stepping, summarize

    now, cap, started = time.monotonic(), limits[1], limits[2]
    target = launch.shim_settings.get(SHIM_PREFIX + "STOP_AFTER", "")
    if cap <= now or not target.isdigit():
        return None
    shim.read_new()
    seen = summarize(shim.events, injected=True)
    per_step = pace(seen.step_times)
    if per_step is not None and still_stepping(seen.step_times, now):
        needed = max(0, int(target) - seen.steps) * per_step * STRETCH_MARGIN + 1.0
        return now + needed if now + needed <= cap else None
    cores = busy(seen, _training_cpu(shim), now, started)
    if cores is not None and cores >= BUSY_FRACTION:
        return min(now + launch.timeout, cap)
    return None


def supervise(
    launch: Launch, trigger: Trigger | None = None, poll_s: float = 0.005
) -> ProcessResult:
    """Run ``launch`` to its end; ``trigger`` (polled) may ask for a signal to the group."""
    if launch.shim and not launch.state_dir:
        raise ValueError("a shim run needs a state_dir")
    started = time.monotonic()
    proc = _start(launch)
    stdout = proc.stdout
    if stdout is None:  # pragma: no cover - stdout=PIPE always gives one
        raise RuntimeError("no stdout pipe")
    lines: list[str] = []
    dropped = [0]
    reader = threading.Thread(target=_pump, args=(stdout.fileno(), lines, dropped), daemon=True)
    reader.start()
    shim = ShimEvents(launch.report_path if launch.shim else os.devnull)
    timed_out, sent = False, None
    ended_at, cpu_at_limit = 0.0, None
    limit = [
        started + launch.timeout,
        started + launch.timeout * max(1.0, launch.stretch),
        started,
    ]
    try:
        timed_out, sent = _wait(
            proc,
            launch,
            trigger,
            deadline=limit,
            shim=shim,
            lines=lines,
            poll_s=poll_s,
        )
        ended_at = time.monotonic()
        if timed_out:
            cpu_at_limit = _training_cpu(shim) if launch.shim else None
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        if proc.returncode is None:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        # Whatever is left of the group (DataLoader workers, a forgotten child) goes too.
        _signal_group(proc.pid, signal.SIGKILL)
        reader.join(timeout=TERM_GRACE_S)
        if not reader.is_alive():  # else a process outside the group still holds the pipe
            stdout.close()
    shim.read_new()
    return ProcessResult(
        launch=launch,
        returncode=proc.returncode,
        timed_out=timed_out,
        sent_signal=sent,
        lines=lines,
        duration=time.monotonic() - started,
        events=shim.events,
        dropped_lines=dropped[0],
        forked=not isinstance(proc, subprocess.Popen),
        ended_at=ended_at or time.monotonic(),
        limit_s=limit[0] - started,
        cpu_at_limit=cpu_at_limit,
        started_at=started,
    )

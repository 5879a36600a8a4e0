"""Bring a roster's files from the box into LOCAL_ROOT, resuming what an earlier try left.

Two ways, the same contract: ``rsync --partial --append-verify`` through OpenSSH (the user's
ssh_config, one ControlMaster connection shared by every try) when both ends have rsync, else
ranged reads over rentcheck's own connection (``python3`` on the box reads ``[offset, end)``
of one file per exec, in 8 MiB pieces, appended here). A file already complete is never sent
again; a partial one is continued from its length. Every try is bounded by the total
deadline; a dropped connection is retried with backoff inside it. Nothing is written outside
LOCAL_ROOT: ``unsafe_paths`` refuses, before the first byte, any roster path that would pass
through a symlink, and the roster's own parser refuses ``..`` and absolute paths.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rentcheck.errors import RemoteError, UsageError

if TYPE_CHECKING:
    from rentcheck.box.transport import Box

__all__ = [
    "Attempt",
    "Endpoint",
    "PullProgress",
    "Want",
    "pull_files",
    "unsafe_paths",
]

PIECE = 8 << 20  # bytes per ranged read (one exec); under the transport's output bound
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
_RETRYABLE_RSYNC = {5, 10, 11, 12, 14, 20, 30, 35, 255}  # connection/IO/timeout/signal
_PARTIAL_RSYNC = {23, 24}  # some files not transferred / vanished: judged after the pull
_NO_SPACE = "no space left on device"  # rsync exit 11 (file I/O) for a full local disk

# One piece of one file on the box: stdout gets at most COUNT bytes from OFFSET.
_READER = (
    "import sys\n"
    "try:\n"
    "    f = open(sys.argv[1], 'rb')\n"
    "except FileNotFoundError:\n"
    "    sys.exit(3)\n"
    "f.seek(int(sys.argv[2])); left = int(sys.argv[3])\n"
    "o = sys.stdout.buffer\n"
    "while left > 0:\n"
    "    b = f.read(min(left, 1 << 20))\n"
    "    if not b: break\n"
    "    o.write(b); left -= len(b)\n"
)


@dataclass(frozen=True)
class Want:
    """One roster file to bring: its path under both roots and its size on the box."""

    path: str
    size: int


@dataclass(frozen=True)
class Endpoint:
    """Where the files are: an ssh alias (or ``local``) and the root's real path there."""

    host: str
    root: str
    ssh_config: str | None = None
    connect_timeout: float | None = None

    def open(self) -> Box:
        from rentcheck.box.transport import open_box

        return open_box(self.host, ssh_config=self.ssh_config, connect_timeout=self.connect_timeout)


@dataclass
class Attempt:
    """One try: how, what it sent (payload bytes, files finished), how long, why it ended."""

    method: str
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    error: str | None = None
    sent: list[str] = field(default_factory=list)
    disk_full: bool = False  # the local disk filled: no retry can help

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "files": self.files,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


class Progress(Protocol):
    def start(self, total_bytes: int, files: int) -> None: ...

    def update(self, done_bytes: int, done_files: int) -> None: ...


def unsafe_paths(local_root: str, paths: Sequence[str]) -> list[tuple[str, str]]:
    """(path, why) for every roster path whose local place is not a plain file inside the
    root: a symlink on the way (it could lead anywhere), or a directory or special file."""
    bad: list[tuple[str, str]] = []
    checked: dict[str, str | None] = {}

    def problem(rel_dir: str) -> str | None:
        if rel_dir in checked:
            return checked[rel_dir]
        parent, _, _ = rel_dir.rpartition("/")
        why = problem(parent) if parent else None
        if why is None:
            try:
                st = os.lstat(os.path.join(local_root, rel_dir))
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISLNK(st.st_mode):
                target = os.readlink(os.path.join(local_root, rel_dir))
                why = f"{rel_dir!r} in LOCAL_ROOT is a symlink (to {target!r})"
            elif st is not None and not stat.S_ISDIR(st.st_mode):
                why = f"{rel_dir!r} in LOCAL_ROOT is a file, not a directory"
        checked[rel_dir] = why
        return why

    for rel in paths:
        head, _, _ = rel.rpartition("/")
        why = problem(head) if head else None
        if why is None:
            try:
                st = os.lstat(os.path.join(local_root, rel))
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                why = "it is a symlink in LOCAL_ROOT: the pull would write where it points"
            elif not stat.S_ISREG(st.st_mode):
                why = "it exists in LOCAL_ROOT and is not a regular file"
        if why is not None:
            bad.append((rel, why))
    return bad


def _local_size(local_root: str, rel: str) -> int:
    try:
        return os.lstat(os.path.join(local_root, rel)).st_size
    except OSError:
        return 0


# --- rsync -------------------------------------------------------------------------------


def ssh_command(endpoint: Endpoint, control_dir: str) -> list[str]:
    """OpenSSH as rsync runs it: the user's config, batch mode, one shared master."""
    command = ["ssh"]
    if endpoint.ssh_config:
        command += ["-F", endpoint.ssh_config]
    timeout = int(endpoint.connect_timeout or 10)
    command += [
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        f"ConnectTimeout={timeout}",
        "-o",
        "ServerAliveInterval=15",
        "-o",
        "ServerAliveCountMax=3",
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={control_dir}/%C",
        "-o",
        "ControlPersist=120",
    ]
    return command


def rsync_command(
    endpoint: Endpoint,
    local_root: str,
    list_file: str,
    control_dir: str,
    *,
    append: bool = True,
    bwlimit_kib: int | None = None,
) -> list[str]:
    source = endpoint.root.rstrip("/") + "/"
    command = [
        "rsync",
        "--secluded-args" if _rsync_new() else "--protect-args",
        f"--files-from={list_file}",
        "--from0",
        "--times",
        "--partial",
        "--copy-links",  # a symlink the roster lists (inside ROOT) arrives as its target's bytes
        "--timeout=60",
        "--out-format=%i\t%l\t%b\t%n",
    ]
    # --append-verify continues a shorter local file and checks the whole file afterwards;
    # a file that changed on the box is sent whole instead (delta to a temp name, renamed).
    command += ["--append-verify"] if append else ["--ignore-times"]
    if bwlimit_kib:
        command.append(f"--bwlimit={bwlimit_kib}")
    if endpoint.host != "local":
        command += ["-e", shlex.join(ssh_command(endpoint, control_dir))]
        source = f"{endpoint.host}:{source}"
    return [*command, source, local_root.rstrip("/") + "/"]


def _rsync_new() -> bool:
    try:
        out = subprocess.run(
            ["rsync", "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
        major, minor, patch = (int(x) for x in out.split()[2].split(".")[:3])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return False
    return (major, minor, patch) >= (3, 2, 4)


def _rsync_try(
    endpoint: Endpoint,
    local_root: str,
    wants: Sequence[Want],
    control_dir: str,
    *,
    append: bool,
    deadline: float,
    bwlimit_kib: int | None,
    progress: Progress | None,
) -> Attempt:
    attempt = Attempt("rsync")
    started = time.monotonic()
    list_file = os.path.join(control_dir, "files")
    with open(list_file, "wb") as handle:
        handle.write(b"".join(w.path.encode() + b"\0" for w in wants))
    command = rsync_command(
        endpoint, local_root, list_file, control_dir, append=append, bwlimit_kib=bwlimit_kib
    )
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else b""))
    reader.start()
    watch = _Poller(local_root, wants, progress, attempt) if progress else None
    for raw in proc.stdout or ():
        parts = raw.decode("utf-8", "replace").rstrip("\n").split("\t", 3)
        if len(parts) == 4 and parts[0].startswith(">f"):
            attempt.files += 1
            attempt.bytes += int(parts[2]) if parts[2].isdigit() else 0
            attempt.sent.append(parts[3])
        if time.monotonic() > deadline:
            break
    try:
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        code = proc.wait()
        attempt.error = "the total deadline passed"
    reader.join()
    if watch is not None:
        watch.stop()
    attempt.seconds = time.monotonic() - started
    tail = " ".join(b"".join(err).decode("utf-8", "replace").split())[-300:]
    if attempt.error is None and code in (1, 2, 4):
        raise UsageError(
            f"rsync refused the transfer (exit {code}): {tail}",
            hint="check the rsync versions on both ends, or pass --method ranged",
        )
    if attempt.error is None and code != 0 and code not in _PARTIAL_RSYNC:
        attempt.error = f"rsync exit {code}: {tail}" if code > 0 else f"rsync killed ({code})"
        attempt.disk_full = code == 11 and _NO_SPACE in tail.lower()
    return attempt


class _Poller:
    """Progress of an rsync try: finished files from its output, the file in flight by size."""

    def __init__(
        self, local_root: str, wants: Sequence[Want], progress: Progress, attempt: Attempt
    ) -> None:
        self._root, self._wants = local_root, wants
        self._progress, self._attempt = progress, attempt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            done = set(self._attempt.sent)
            total = files = 0
            looked = 0
            for w in self._wants:
                if w.path in done:
                    total += w.size
                    files += 1
                elif looked < 4:  # the ones in flight; the rest are not started yet
                    looked += 1
                    total += min(w.size, _local_size(self._root, w.path))
            self._progress.update(total, files)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# --- ranged reads over rentcheck's own connection ----------------------------------------


def _open_local(path: str, *, truncate: bool) -> int:
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_TRUNC if truncate else os.O_APPEND
    return os.open(path, flags, 0o644)


def _ranged_try(
    endpoint: Endpoint,
    local_root: str,
    wants: Sequence[Want],
    *,
    append: bool,
    deadline: float,
    bwlimit_kib: int | None,
    progress: Progress | None,
    done_before: int,
) -> Attempt:
    from rentcheck.box.transport import close_host

    attempt = Attempt("ranged")
    started = time.monotonic()
    # Under a rate cap, pieces of a quarter second each: the cap holds smoothly.
    piece = PIECE if not bwlimit_kib else max(64 << 10, min(PIECE, bwlimit_kib * 256))
    done_bytes, done_files = done_before, 0
    try:
        box = endpoint.open()
        for w in wants:
            final = os.path.join(local_root, w.path)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            # A whole-file re-pull goes to a temp name beside it, renamed when complete.
            target = final if append else _temp_name(final)
            have = _resume_at(box, endpoint, local_root, w, append=append)
            if have >= w.size and append:
                done_files += 1
                continue
            fd = _open_local(target, truncate=not append)
            try:
                offset = have
                while offset < w.size:
                    if time.monotonic() > deadline:
                        attempt.error = "the total deadline passed"
                        return attempt
                    count = min(piece, w.size - offset)
                    data = _read_piece(box, endpoint, w.path, offset, count)
                    _write_all(fd, data)
                    offset += len(data)
                    attempt.bytes += len(data)
                    done_bytes += len(data)
                    if progress is not None:
                        progress.update(done_bytes, done_files)
                    _throttle(attempt.bytes, started, bwlimit_kib)
                    if len(data) < count:
                        break  # shorter on the box than the roster says: judged after the pull
                os.fsync(fd)
            finally:
                os.close(fd)
            if not append:
                os.replace(target, final)
            attempt.files += 1
            attempt.sent.append(w.path)
            done_files += 1
    except RemoteError as exc:
        close_host(endpoint.host, ssh_config=endpoint.ssh_config)  # the next try: a fresh one
        attempt.error = exc.message
    except OSError as exc:
        _disk_full(attempt, exc, local_root)
    finally:
        attempt.seconds = time.monotonic() - started
    return attempt


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data``: a short write (a disk filling up) is continued, so the next one
    raises ENOSPC instead of a short file passing as complete."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _disk_full(attempt: Attempt, exc: OSError, local_root: str) -> None:
    """A full local disk ends the try with no retry; any other local error is raised."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        raise exc
    attempt.error = f"writing {local_root}: {exc.strerror}"
    attempt.disk_full = True


# SHA-256 of the first COUNT bytes of one file on the box (the prefix a resume builds on).
_PREFIX = (
    "import hashlib, sys\n"
    "h = hashlib.sha256(); left = int(sys.argv[2])\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    while left > 0:\n"
    "        b = f.read(min(left, 1 << 20))\n"
    "        if not b: break\n"
    "        h.update(b); left -= len(b)\n"
    "print(h.hexdigest())\n"
)


def _resume_at(box: Box, endpoint: Endpoint, local_root: str, w: Want, *, append: bool) -> int:
    """Where the ranged fetch of ``w`` starts: the local part's length when it is a prefix
    of the box's file, else 0 (the part is emptied). A whole-file fetch starts its temp from
    byte 0: what an earlier try left there may be of another version."""
    have = _local_size(local_root, w.path) if append else 0
    if 0 < have < w.size and not _same_prefix(
        box, endpoint, w.path, os.path.join(local_root, w.path), have
    ):
        os.truncate(os.path.join(local_root, w.path), 0)
        return 0  # rewritten on the box since this part arrived: start again
    return have


def _same_prefix(box: Box, endpoint: Endpoint, rel: str, local: str, count: int) -> bool:
    """Whether the local part equals the box file's first ``count`` bytes (both hashed)."""
    import hashlib

    from rentcheck.pull.remote_roster import remote_path

    path = remote_path(endpoint.root, rel)
    script = f"exec python3 -I -S -c {shlex.quote(_PREFIX)} {shlex.quote(path)} {count}"
    result = box.run(script, timeout=600.0, label=f"hashing the start of {rel!r}")
    if not result.ok:
        return False
    digest = hashlib.sha256()
    with open(local, "rb") as handle:
        left = count
        while left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return result.stdout.decode("ascii", "replace").strip() == digest.hexdigest()


def _temp_name(final: str) -> str:
    head, tail = os.path.split(final)
    return os.path.join(head, f".{tail}.rentcheck-tmp")


def _read_piece(box: Box, endpoint: Endpoint, rel: str, offset: int, count: int) -> bytes:
    from rentcheck.pull.remote_roster import remote_path

    path = remote_path(endpoint.root, rel)
    script = f"exec python3 -I -S -c {shlex.quote(_READER)} {shlex.quote(path)} {offset} {count}"
    result = box.run(script, timeout=120.0, label=f"reading {rel!r}")
    if result.exit_status == 3:
        return b""  # gone from the box since the roster: the re-read after the pull says so
    if not result.ok:
        raise RemoteError(f"cannot read {rel!r} on {box.name}: {result.stderr_tail()}")
    return result.stdout


def _throttle(sent: int, started: float, bwlimit_kib: int | None) -> None:
    if bwlimit_kib:
        ahead = sent / (bwlimit_kib * 1024) - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)


# --- the retry loop ------------------------------------------------------------------------


def pull_files(
    endpoint: Endpoint,
    local_root: str,
    wants: Sequence[Want],
    *,
    method: str,
    deadline: float,
    append: bool = True,
    bwlimit_kib: int | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Attempt]:
    """Tries until one ends cleanly or ``deadline`` (a ``time.monotonic()`` value) would pass
    before the next; the last try's ``error`` says why when none did."""
    attempts: list[Attempt] = []
    delay = BACKOFF_FIRST
    control_dir = tempfile.mkdtemp(prefix="rc-pull-")
    try:
        while True:
            if method == "rsync":
                attempt = _rsync_try(
                    endpoint,
                    local_root,
                    wants,
                    control_dir,
                    append=append,
                    deadline=deadline,
                    bwlimit_kib=bwlimit_kib,
                    progress=progress,
                )
            else:
                done = sum(min(w.size, _local_size(local_root, w.path)) for w in wants)
                attempt = _ranged_try(
                    endpoint,
                    local_root,
                    wants,
                    append=append,
                    deadline=deadline,
                    bwlimit_kib=bwlimit_kib,
                    progress=progress,
                    done_before=done if append else 0,
                )
            attempts.append(attempt)
            if attempt.error is None or attempt.disk_full or time.monotonic() + delay > deadline:
                return attempts
            sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)
    finally:
        if method == "rsync" and endpoint.host != "local":
            _stop_master(endpoint, control_dir)
        shutil.rmtree(control_dir, ignore_errors=True)


def _stop_master(endpoint: Endpoint, control_dir: str) -> None:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [*ssh_command(endpoint, control_dir), "-O", "exit", endpoint.host],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )


class PullProgress:
    """One status line on a terminal: files and bytes done / total, rate, ETA."""

    def __init__(self, stream: Any, *, interval: float = 0.25) -> None:
        self._stream = stream
        self._interval = interval
        self._lock = threading.Lock()
        self._total = self._files = 0
        self._start = self._shown = 0.0
        self._done = self._files_done = 0

    def start(self, total_bytes: int, files: int) -> None:
        with self._lock:
            self._total, self._files = total_bytes, files
            self._start = time.monotonic()

    def update(self, done_bytes: int, done_files: int) -> None:
        from rentcheck.pull.progress import human_bytes

        with self._lock:
            self._done, self._files_done = done_bytes, done_files
            now = time.monotonic()
            if now - self._shown < self._interval:
                return
            self._shown = now
            rate = done_bytes / max(now - self._start, 1e-6)
            left = max(self._total - done_bytes, 0)
            eta = f"{int(left / rate) // 60}:{int(left / rate) % 60:02d}" if rate > 0 else "--:--"
            self._stream.write(
                f"\r\x1b[Kpull: {done_files:,}/{self._files:,} files, "
                f"{human_bytes(done_bytes)} / {human_bytes(self._total)}, "
                f"{human_bytes(rate)}/s, ETA {eta}"
            )
            self._stream.flush()

    def finish(self) -> None:
        with self._lock:
            self._stream.write("\r\x1b[K")
            self._stream.flush()

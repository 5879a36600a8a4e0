# ruff: noqa: UP031, BLE001
# (runs on the box's python3, 3.6+, appended to probe.py: typing.List and % formats; one
# broken fact must never lose the others, hence the broad except)
"""The job probe: what ``launch-check`` and ``watch`` need to know about one launched job.

Sent over stdin after the audit probe's functions (``probe.py`` without its ``__main__``
block), so memory, GPU and the probe's time budget are the audit's own code. Every file
read runs in a thread with a deadline: a log or checkpoint on a hung mount becomes an
``unreadable`` entry, not a hung watcher. The process is judged by pid + start time + boot id
from ``/proc``, never by matching command lines, so the probe can never count itself.
"""

import contextlib
import json
import os
import re
import sys
import threading
import time
from typing import Any, Dict, List, Optional

if "Probe" not in globals():  # type-checking and tests; on the box probe.py came first
    from rentcheck.payload.probe import Probe, gpu_finish, gpu_start, memory, read_mounts, space

JOB_SCHEMA = "rentcheck/job-facts/v1"
FactDict = Dict[str, Any]
TRACEBACK = "Traceback (most recent call last):"


class Hung(Exception):
    """A file system call did not return within its limit."""


def bounded(limit: float, func: Any, *args: Any) -> Any:
    """``func(*args)`` in a daemon thread; Hung when it has not returned after ``limit`` s."""
    box = {}  # type: Dict[str, Any]

    def target() -> None:
        try:
            box["value"] = func(*args)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=target)
    worker.daemon = True
    worker.start()
    worker.join(max(0.05, limit))
    if worker.is_alive():
        raise Hung("no answer within %.3g s (a hung mount or a FIFO?)" % limit)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _text(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read(1 << 20).decode("utf-8", "replace")


def read_status(path: str) -> FactDict:
    """The wrapper's ``key=value`` lines (numbers only; written by temp file + rename)."""
    status = {}  # type: FactDict
    for line in _text(path).splitlines():
        key, sep, value = line.partition("=")
        if sep and value.strip().lstrip("-").isdigit():
            status[key.strip()] = int(value.strip())
        elif sep:
            status[key.strip()] = value.strip()
    return status


def proc_stat(pid: int) -> Optional[FactDict]:
    """State, pgrp, session and start ticks of a live pid; None when it does not exist."""
    try:
        text = _text("/proc/%d/stat" % pid)
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return {
        "state": fields[0],
        "ppid": int(fields[1]),
        "pgrp": int(fields[2]),
        "sid": int(fields[3]),
        "start_ticks": int(fields[19]),
    }


def process(status: FactDict) -> FactDict:
    """Is the wrapper the wrapper we started (pid, start ticks, boot id), and its group."""
    pid = status.get("pid")
    fact = {"pid": pid, "alive": False, "reason": None}  # type: FactDict
    if not isinstance(pid, int):
        fact["reason"] = "no pid in the status file"
        return fact
    boot = _text("/proc/sys/kernel/random/boot_id").strip()
    if status.get("boot_id") and boot != status.get("boot_id"):
        fact["reason"] = "the box rebooted since the launch"
        return fact
    stat = proc_stat(pid)
    if stat is None:
        fact["reason"] = "pid %d does not exist" % pid
    elif stat["start_ticks"] != status.get("start_ticks"):
        fact["reason"] = "pid %d is another process (started at another time)" % pid
    elif stat["state"] in ("Z", "X"):
        fact["reason"] = "pid %d is a zombie" % pid
    else:
        fact.update(alive=True, sid=stat["sid"], pgrp=stat["pgrp"], state=stat["state"])
    pgid = status.get("pgid", pid)
    members = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            other = proc_stat(int(entry))
            # Started no earlier than the wrapper: a recycled group id cannot count.
            if other is None or other["pgrp"] != pgid or other["state"] in ("Z", "X"):
                continue
            if other["start_ticks"] >= int(status.get("start_ticks") or 0):
                members += 1
    fact["group_alive"] = members
    return fact


def log_facts(path: str, request: FactDict, probe: "Probe") -> FactDict:
    """Size, mtime, the head since the launch, the tail, the first and the last step line."""
    patterns = [re.compile(p) for p in request.get("patterns") or []]
    st = bounded(probe.limit(5), os.stat, path)
    start = int(request.get("log_start") or 0)
    since = int(request.get("log_offset") or start)
    if st.st_size < since:  # the log was truncated or replaced: read it from the top
        since = start = 0
    fact = {"path": path, "size": st.st_size, "mtime": st.st_mtime, "start": start}
    fact.update({"first_step": None, "last_step": None, "traceback_at_head": None})

    def read_range(begin: int, size: int) -> str:
        with open(path, "rb") as handle:
            handle.seek(begin)
            return handle.read(size).decode("utf-8", "replace")

    head = bounded(probe.limit(5), read_range, start, int(request.get("head_bytes") or 1 << 16))
    head_lines = head.splitlines()
    for index, line in enumerate(head_lines):
        if fact["first_step"] is None and any(p.search(line) for p in patterns):
            fact["first_step"] = {"line": line[:500], "index": index}
        if line.startswith(TRACEBACK) and fact["traceback_at_head"] is None:
            fact["traceback_at_head"] = "\n".join(head_lines[index : index + 30])[-3000:]
    window = 4 << 20  # the last step is near the end; never read a whole huge log
    begin = max(since, st.st_size - window)
    tail = bounded(probe.limit(5), read_range, begin, st.st_size - begin)
    lines = tail.splitlines()
    for line in reversed(lines):
        for pattern in patterns:
            match = pattern.search(line)
            if match:
                step = match.groupdict().get("step")
                fact["last_step"] = {"line": line[:500], "step": int(step) if step else None}
                break
        if fact["last_step"]:
            break
    if not lines and begin > 0:  # nothing new: the tail lines are the log's last ones
        lines = bounded(probe.limit(5), read_range, max(0, st.st_size - 8192), 8192).splitlines()
    fact["tail"] = [line[:500] for line in lines[-int(request.get("tail_lines") or 10) :]]
    fact["new_bytes"] = st.st_size - since
    return fact


def checkpoint_facts(directory: str, probe: "Probe") -> FactDict:
    """The newest regular file under the checkpoint directory (one level of subdirs)."""

    def scan() -> FactDict:
        newest = None
        count = 0
        for root, dirs, files in os.walk(directory):
            if root.count(os.sep) - directory.count(os.sep) >= 1:
                dirs[:] = []
            for name in files:
                full = os.path.join(root, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                count += 1
                if newest is None or st.st_mtime > newest[1]:
                    newest = (full, st.st_mtime, st.st_size)
        fact = {"dir": directory, "files": count, "newest": None}  # type: FactDict
        if newest:
            fact["newest"] = {"path": newest[0], "mtime": newest[1], "size": newest[2]}
        return fact

    return bounded(probe.limit(5), scan)  # type: ignore[no-any-return]


def wait_first_step(request: FactDict, probe: "Probe", status_path: str) -> None:
    """Poll until the log's head has a step line, the job is gone, or the wait is over."""
    until = time.time() + float(request.get("wait_first_step") or 0)
    while time.time() < min(until, probe.deadline - 2):
        try:
            status = read_status(status_path)
            log = log_facts(status_log(request, status), request, probe)
            if log["first_step"] or "exit_status" in status or not process(status)["alive"]:
                return
        except Exception:  # noqa: S110 - not there yet: the wrapper may still be starting
            pass
        time.sleep(0.25)


def status_log(request: FactDict, status: FactDict) -> str:
    return str(request.get("log") or status.get("log") or "")


def job_facts(request: FactDict) -> FactDict:
    probe = Probe(request)
    # nvidia-smi and dmesg run while the files are read; each is killed at its limit.
    started = probe.read("gpu", gpu_start, {"gpu": False}) if request.get("gpu") else None
    directory = os.path.expanduser(str(request["job_dir"]))
    status_path = os.path.join(directory, "status")
    facts = {"schema": JOB_SCHEMA, "now": time.time(), "job_dir": directory}  # type: FactDict
    if request.get("wait_first_step"):
        wait_first_step(request, probe, status_path)
    try:
        status = bounded(probe.limit(5), read_status, status_path)
    except Exception as exc:
        probe.note("status", exc)
        status = None
    facts["status"] = status
    if status is not None:
        facts["process"] = probe.read("process", process, status)
        log = status_log(request, status)
        if log:
            request = dict(request, log_start=status.get("log_start", 0))
            facts["log"] = probe.read("log", log_facts, log, request, probe)
        ckpt = request.get("ckpt_dir") or status.get("ckpt_dir")
        if ckpt:
            ckpt = os.path.join(str(status.get("cwd") or "~"), os.path.expanduser(str(ckpt)))
            facts["checkpoint"] = probe.read("checkpoint", checkpoint_facts, ckpt, probe)
    facts["disk"] = {}
    paths = dict(request.get("disk_paths") or {})
    if request.get("disk_of_job") and status is not None:
        # The log's and the checkpoints' filesystems, unless named otherwise.
        log = status_log(request, status)
        if log:
            paths.setdefault("log", os.path.dirname(log))
        if facts.get("checkpoint"):
            paths.setdefault("checkpoint", facts["checkpoint"]["dir"])
    for role, path in sorted(paths.items()):
        try:
            full = os.path.expanduser(path)
            facts["disk"][role] = dict(bounded(probe.limit(5), space, full), path=full)
        except Exception as exc:
            probe.note("disk." + role, exc)
    if request.get("memory"):
        facts["memory"] = probe.read("memory", memory, probe.read("mounts", read_mounts) or [])
    if request.get("gpu"):
        facts["gpu"] = probe.read("gpu", gpu_finish, started, probe) if started else None
    facts["seconds"] = time.time() - facts["now"]
    facts["unreadable"] = probe.unreadable
    return facts


def _real(path: str) -> FactDict:
    """Where a recorded path is on the box now: its real path, or that nothing is there."""
    full = os.path.expanduser(path)
    try:
        os.lstat(full)
    except FileNotFoundError:
        return {"real": os.path.realpath(full), "exists": False}
    return {"real": os.path.realpath(full), "exists": True}


def teardown_facts(request: FactDict) -> FactDict:
    """For teardown: is each recorded job alive (pid + start ticks + its group), and where
    are the recorded paths and the pulled root now (real paths, symlinks resolved)."""
    probe = Probe(request)
    facts = {"schema": JOB_SCHEMA, "now": time.time(), "jobs": {}, "paths": {}}  # type: FactDict
    for key, status in sorted((request.get("jobs") or {}).items()):
        try:
            facts["jobs"][key] = bounded(probe.limit(10), process, status)
        except Exception as exc:  # unknown is not ended: the caller refuses on a missing key
            probe.note("job " + key, exc)
    for path in [*sorted(request.get("paths") or []), str(request.get("root") or "")]:
        if not path:
            continue
        try:
            facts["paths"][path] = bounded(probe.limit(5), _real, path)
        except Exception as exc:
            probe.note("path " + path, exc)
    root = str(request.get("root") or "")
    real = os.path.realpath(os.path.expanduser(root)) if root else ""
    if request.get("jobs_dir") and real:
        try:
            jobs_dir = str(request["jobs_dir"])
            facts["box_jobs"] = bounded(probe.limit(10), box_jobs, jobs_dir, real)
        except Exception as exc:  # unknown: the caller refuses when it is missing
            probe.note("box_jobs", exc)
    if real:
        try:
            facts["writers"] = bounded(probe.limit(20), writers_under, real)
        except Exception as exc:
            probe.note("writers", exc)
    facts["unreadable"] = probe.unreadable
    return facts


def box_jobs(jobs_dir: str, root: str) -> FactDict:
    """Every job any ``rentcheck launch`` left on this box (whatever project or alias
    started it) whose working directory, log or checkpoint directory lies under ``root``:
    its status numbers and whether its process or group is alive."""
    found = {}  # type: FactDict
    directory = os.path.expanduser(jobs_dir)
    if not os.path.isdir(directory):
        return found
    prefix = root.rstrip("/") + "/"
    for session in sorted(os.listdir(directory)):
        path = os.path.join(directory, session, "status")
        try:
            status = read_status(path)
        except OSError:
            continue  # a job directory without a status: nothing was started from it
        places = [str(status.get(k) or "") for k in ("cwd", "log", "ckpt_dir")]
        reals = [os.path.realpath(os.path.expanduser(p)) for p in places if p]
        if any(r == root or r.startswith(prefix) for r in reals):
            found[session] = {"status": status, "process": process(status)}
    return found


def writers_under(root: str) -> List[FactDict]:
    """Processes (other than this probe) holding a file under ``root`` open for writing."""
    prefix = root.rstrip("/") + "/"
    found = []  # type: List[FactDict]
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        fd_dir = "/proc/%s/fd" % entry
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to see
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
                if not target.startswith(prefix):
                    continue
                flags = 0
                for line in _text("/proc/%s/fdinfo/%s" % (entry, fd)).splitlines():
                    if line.startswith("flags:"):
                        flags = int(line.split()[1], 8)
            except (OSError, ValueError):
                continue
            if flags & 3:  # O_WRONLY or O_RDWR
                comm = ""
                with contextlib.suppress(OSError):
                    comm = _text("/proc/%s/comm" % entry).strip()
                found.append({"pid": int(entry), "comm": comm, "path": target})
    return found


def job_main(argv: List[str]) -> None:
    request = json.loads(argv[0])
    teardown = request.get("mode") == "teardown"
    facts = teardown_facts(request) if teardown else job_facts(request)
    sys.stdout.write(json.dumps(facts, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()
    os._exit(0)  # a reader thread stuck on a hung mount must not keep the probe alive


if __name__ == "__main__":
    job_main(sys.argv[1:])

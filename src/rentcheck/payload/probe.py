# ruff: noqa: UP031, BLE001, S108
# (runs on the box's python3, 3.6+: typing.List/Optional and % formats; one broken fact must
# never lose the others, hence the broad except; /dev/shm is measured, not written)
"""The box probe: one self-contained, stdlib-only program, sent over the SSH channel's stdin.

``python3 -I -B - REQUEST_JSON`` runs it (``-B``: it writes nothing, not even bytecode); it
prints one JSON document of facts and never fails as a whole because one fact is missing:
what could not be read goes into ``unreadable`` with the reason. It runs unchanged on
Python 3.6+, which is why it avoids newer syntax.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Set, Tuple

SCHEMA = "rentcheck/box-facts/v1"
FactDict = Dict[str, Any]
SHELLS = ("bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox")
SHELL_OPTS_WITH_VALUE = ("-o", "+o", "-O", "+O", "--rcfile", "--init-file")
PYTHON_OPTS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")
TOOLS = ("tmux", "screen", "setsid", "nohup", "rsync", "timeout")
EVENT_FIELDS = (
    "index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,temperature.gpu,"
    "utilization.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active,"
    "clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,"
    "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown"
)
THROTTLE_FIELDS = EVENT_FIELDS.replace("clocks_event_reasons", "clocks_throttle_reasons")
TORCH_CODE = (
    "import json, sys\n"
    "r = {'python': sys.executable}\n"
    "try:\n"
    "    import torch\n"
    "    r['torch'] = torch.__version__\n"
    "    r['cuda'] = torch.version.cuda\n"
    "    r['cuda_available'] = bool(torch.cuda.is_available())\n"
    "    r['device_count'] = torch.cuda.device_count() if r['cuda_available'] else 0\n"
    "except Exception as e:\n"
    "    r['error'] = '%s: %s' % (type(e).__name__, e)\n"
    "print(json.dumps(r))\n"
)


def _why(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, exc)


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def _unescape(text: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...).
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 4].isdigit():
            out.append(chr(int(text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def read_mounts() -> List[FactDict]:
    mounts = []
    for line in _read("/proc/self/mountinfo").splitlines():
        parts = line.split(" ")
        sep = parts.index("-")
        mounts.append(
            {
                "mount_id": int(parts[0]),
                "dev": parts[2],
                "root": _unescape(parts[3]),
                "mount_point": _unescape(parts[4]),
                "fstype": parts[sep + 1],
                "source": _unescape(parts[sep + 2]) if len(parts) > sep + 2 else "",
                "super_options": parts[sep + 3] if len(parts) > sep + 3 else "",
            }
        )
    return mounts


def mount_for(path: str, mounts: List[FactDict]) -> Optional[FactDict]:
    best = None  # the longest mount point above the path; the later of equals is on top
    for mount in mounts:
        point = mount["mount_point"]
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mount_point"])):
            best = mount
    if best is None:
        return None
    keep = ("mount_id", "dev", "mount_point", "fstype", "source")
    return {key: best[key] for key in keep}


def space(path: str) -> FactDict:
    st = os.statvfs(path)
    return {
        "bytes_total": st.f_blocks * st.f_frsize,
        "bytes_free": st.f_bavail * st.f_frsize,
        "inodes_total": st.f_files,
        "inodes_free": st.f_favail,
    }


def place(path: str, mounts: List[FactDict]) -> FactDict:
    """Where a path lives: its realpath, mount and free space (of its nearest existing dir)."""
    absolute = os.path.abspath(os.path.expanduser(path))
    real = os.path.realpath(absolute)
    measured = real
    while not os.path.exists(measured) and measured != "/":
        measured = os.path.dirname(measured)
    return {
        "path": path,
        "realpath": real,
        "exists": os.path.exists(absolute),
        "is_symlink": os.path.islink(absolute),
        "measured_at": measured,
        "space": space(measured),
        "mount": mount_for(measured, mounts),
    }


def disk_usage(top: str, deadline: float, seen: Set[Tuple[int, int]]) -> Tuple[int, int, bool]:
    """(bytes allocated, files, complete) under ``top``; no symlink below top is followed.

    The budget is checked per entry, so one huge flat directory cannot outlast it.
    """
    total = files = 0
    stack = [top]
    while stack:
        try:
            listing = os.scandir(stack.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                if time.time() > deadline:
                    return total, files, False
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)  # hard links and HF's blob links count once
                if key in seen:
                    continue
                seen.add(key)
                total += getattr(st, "st_blocks", 0) * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    files += 1
    return total, files, True


def cache_candidates(extra: List[str]) -> List[Tuple[str, str, str]]:
    env = os.environ
    base = env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    found = []  # (name, source, path); env-named caches count even before they exist
    for name, var in (
        ("huggingface", "HF_HUB_CACHE"),
        ("huggingface", "HF_HOME"),
        ("transformers", "TRANSFORMERS_CACHE"),
        ("modelscope", "MODELSCOPE_CACHE"),
        ("torch", "TORCH_HOME"),
        ("pip", "PIP_CACHE_DIR"),
        ("uv", "UV_CACHE_DIR"),
    ):
        if env.get(var):
            found.append((name, var, env[var]))
    for part in (env.get("CONDA_PKGS_DIRS") or "").split(","):
        if part.strip():
            found.append(("conda-pkgs", "CONDA_PKGS_DIRS", part.strip()))
    defaults = [
        ("huggingface", os.path.join(base, "huggingface")),
        ("modelscope", os.path.join(base, "modelscope")),
        ("torch", os.path.join(base, "torch")),
        ("pip", os.path.join(base, "pip")),
        ("uv", os.path.join(base, "uv")),
    ]
    for conda in ("~/miniconda3", "~/anaconda3", "~/miniforge3", "/opt/conda"):
        defaults.append(("conda-pkgs", os.path.join(os.path.expanduser(conda), "pkgs")))
    for name, path in defaults:
        if os.path.lexists(path):
            found.append((name, "default", path))
    found.extend(("configured", "config", path) for path in extra)
    return found


def caches(request: FactDict, mounts: List[FactDict], probe: "Probe") -> List[FactDict]:
    deadline = time.time() + probe.limit(float(request.get("walk_seconds", 2.0)))
    seen = set()  # type: Set[Tuple[int, int]]
    done = set()  # type: Set[str]
    out = []
    for name, source, path in cache_candidates(list(request.get("caches") or [])):
        fact = place(path, mounts)
        if fact["realpath"] in done:
            continue
        done.add(fact["realpath"])
        fact.update({"name": name, "source": source, "size_bytes": None, "files": None})
        if fact["exists"] and os.path.isdir(fact["realpath"]):
            size, files, complete = disk_usage(fact["realpath"], deadline, seen)
            fact.update({"size_bytes": size, "files": files, "complete": complete})
        out.append(fact)
    return out


def _cgroup_dir(
    mounts: List[FactDict], version: int, controller: str, path: str
) -> Tuple[str, str]:
    """(this process's cgroup directory, the hierarchy's mount point)."""
    for mount in mounts:
        if version == 2 and mount["fstype"] != "cgroup2":
            continue
        if version == 1 and (
            mount["fstype"] != "cgroup" or controller not in mount["super_options"].split(",")
        ):
            continue
        root = str(mount["root"]).rstrip("/")
        point = str(mount["mount_point"])
        rel = path[len(root) :] if root and path.startswith(root) else path
        candidate = point.rstrip("/") + rel
        # Without a cgroup namespace the path names the host's tree; the mount root is ours.
        return (candidate if os.path.isdir(candidate) else point), point
    raise OSError("no cgroup%s mount for %s" % ("2" if version == 2 else "", controller))


def _upwards(directory: str, top: str) -> List[str]:
    """``directory`` and its parents up to the hierarchy's mount point (limits nest)."""
    found = [directory]
    while directory.rstrip("/") != top.rstrip("/") and directory not in ("/", ""):
        directory = os.path.dirname(directory)
        found.append(directory)
    return found


def _smallest(directory: str, top: str, name: str) -> Optional[str]:
    """The tightest value of a v2 limit file (``max`` = none) on the way up to the root."""
    best = None  # type: Optional[Tuple[float, str]]
    for current in _upwards(directory, top):
        try:
            text = _read(os.path.join(current, name)).strip()
        except OSError:
            continue
        words = text.split()
        if not words or words[0] == "max":
            continue
        value = float(words[0]) / (float(words[1]) if len(words) > 1 else 1.0)
        if best is None or value < best[0]:
            best = (value, text)
    return best[1] if best else None


def _field(text: str, name: str) -> Optional[int]:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name:
            return int(parts[1])
    return None


def _cgroup_paths() -> Dict[str, str]:
    """controller -> cgroup path; v2's single hierarchy is under the key ""."""
    paths = {}
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _mem_total() -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def _memory_v1(mounts: List[FactDict], path: str) -> FactDict:
    directory, _ = _cgroup_dir(mounts, 1, "memory", path)
    limit = _field(_read(os.path.join(directory, "memory.stat")), "hierarchical_memory_limit")
    if limit is None:
        limit = int(_read(os.path.join(directory, "memory.limit_in_bytes")))
    return {
        "cgroup_version": 1,
        "cgroup_dir": directory,
        "limit_bytes": limit,
        "usage_bytes": int(_read(os.path.join(directory, "memory.usage_in_bytes"))),
        "oom_kill": _field(_read(os.path.join(directory, "memory.oom_control")), "oom_kill"),
    }


def _memory_v2(mounts: List[FactDict], path: str) -> FactDict:
    directory, top = _cgroup_dir(mounts, 2, "", path)
    limit = _smallest(directory, top, "memory.max")
    return {
        "cgroup_version": 2,
        "cgroup_dir": directory,
        "limit_bytes": int(limit) if limit else None,
        "usage_bytes": int(_read(os.path.join(directory, "memory.current"))),
        "oom_kill": _field(_read(os.path.join(directory, "memory.events")), "oom_kill"),
    }


def memory(mounts: List[FactDict], paths: Optional[Dict[str, str]] = None) -> FactDict:
    """Memory limit, usage and OOM-kill count of this process's cgroup (v1 or v2)."""
    paths = _cgroup_paths() if paths is None else paths
    fact = {"mem_total_bytes": _mem_total(), "cgroup_version": None}  # type: FactDict
    fact.update({"limit_bytes": None, "usage_bytes": None, "oom_kill": None})
    try:
        if "memory" in paths:
            fact.update(_memory_v1(mounts, paths["memory"]))
            return fact
    except OSError:
        if "" not in paths:  # a v1 entry without its mount: fall through to v2 if there
            raise
    if "" in paths:
        fact.update(_memory_v2(mounts, paths[""]))
    return fact


def cpu(mounts: List[FactDict], paths: Optional[Dict[str, str]] = None) -> FactDict:
    """nproc and the CPU quota (v1 cfs_quota_us/cfs_period_us, v2 cpu.max) in cores."""
    affinity = getattr(os, "sched_getaffinity", None)
    fact = {"nproc": len(affinity(0)) if affinity else os.cpu_count()}  # type: FactDict
    fact["quota_cores"] = None
    paths = _cgroup_paths() if paths is None else paths
    if "cpu" in paths:
        directory, _ = _cgroup_dir(mounts, 1, "cpu", paths["cpu"])
        quota = int(_read(os.path.join(directory, "cpu.cfs_quota_us")))
        period = int(_read(os.path.join(directory, "cpu.cfs_period_us")))
        fact["cpu_max"] = "%d %d" % (quota, period)
        if quota > 0:
            fact["quota_cores"] = quota / float(period)
    elif "" in paths:
        directory, top = _cgroup_dir(mounts, 2, "", paths[""])
        text = _smallest(directory, top, "cpu.max")
        fact["cpu_max"] = text or "max"
        if text:
            words = text.split()
            fact["quota_cores"] = int(words[0]) / float(words[1] if len(words) > 1 else 100000)
    return fact


def _start(argv: List[str], env: Optional[Dict[str, str]] = None) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        env=env,
        start_new_session=True,  # a timeout kills its whole group (a wrapper script's children)
    )


def _finish(proc: "subprocess.Popen[str]", timeout: float) -> Tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        try:
            out, err = proc.communicate(timeout=1)
        except subprocess.TimeoutExpired:  # stuck in the kernel (a hung driver): abandon it
            out, err = "", ""
        return -9, out or "", "timed out after %.3g s" % timeout
    return proc.returncode, out, err


def gpu_start(request: FactDict) -> Optional[FactDict]:
    """Start nvidia-smi (query + header) and dmesg now; they finish while other facts are read."""
    smi = shutil.which("nvidia-smi")
    if not smi and not request.get("gpu"):
        return None
    started = {"nvidia_smi": smi}  # type: FactDict
    if smi:
        fmt = "--format=csv,noheader,nounits"
        started["query"] = _start([smi, "--query-gpu=" + EVENT_FIELDS, fmt])
        started["header"] = _start([smi])
    if shutil.which("dmesg"):
        started["dmesg"] = _start(["dmesg"])
    return started


def gpu_finish(started: FactDict, probe: "Probe") -> FactDict:
    fact = {"nvidia_smi": started["nvidia_smi"], "query": None, "header": None}  # type: FactDict
    if "query" in started:
        rc, out, err = _finish(started["query"], probe.limit(20))
        fields = EVENT_FIELDS
        if rc != 0 and "field" in (out + err).lower():  # an older driver: older field names
            fields = THROTTLE_FIELDS
            fmt = "--format=csv,noheader,nounits"
            rc, out, err = _finish(
                _start([started["nvidia_smi"], "--query-gpu=" + fields, fmt]), probe.limit(20)
            )
        fact["query"] = {"fields": fields.split(","), "csv": out, "rc": rc, "stderr": err[-500:]}
        if rc == -9:
            probe.note("nvidia-smi", "nvidia-smi --query-gpu %s" % err)
        rc, out, err = _finish(started["header"], probe.limit(20))
        fact["header"] = "\n".join(out.splitlines()[:12]) if rc == 0 else None
        if rc != 0:
            probe.note("nvidia-smi", "exit %d: %s" % (rc, err.strip()[-200:]))
    fact["xid_lines"] = None
    if "dmesg" in started:
        rc, out, err = _finish(started["dmesg"], probe.limit(10))
        if rc == 0:
            fact["xid_lines"] = [line for line in out.splitlines() if "Xid" in line][-100:]
        else:
            probe.note("dmesg", "exit %d: %s" % (rc, err.strip()[-200:]))
    else:
        probe.note("dmesg", "dmesg is not installed")
    return fact


def torch_start(request: FactDict) -> Any:
    python = request.get("torch_python")
    if not python:
        return None
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        return _start([python, "-B", "-c", TORCH_CODE], env=env)
    except OSError as exc:
        return {"python": python, "error": _why(exc)}


def torch_finish(started: Any, request: FactDict, probe: "Probe") -> FactDict:
    if isinstance(started, dict):
        return started
    rc, out, err = _finish(started, probe.limit(float(request.get("torch_timeout", 30))))
    try:
        return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]
    except (ValueError, IndexError):
        tail = err.strip()[-300:]
        return {"python": request.get("torch_python"), "error": "exit %d: %s" % (rc, tail)}


def _proc_stat(pid: str, uptime: float, now: float, tick: float) -> Tuple[int, float]:
    """(parent pid, start time as epoch). The start comes from uptime, not btime: btime has
    whole seconds, which would blur the order of "file written" and "process started"."""
    stat = _read("/proc/%s/stat" % pid)
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), now - (uptime - int(fields[19]) / tick)


def _script_arg(argv: List[str], with_value: Tuple[str, ...], stop_letters: str) -> str:
    """The script an interpreter runs, or "" for ``-c CODE``, ``-m MOD``, ``-s``, stdin."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[i + 1] if i + 1 < len(argv) else ""
        if arg in with_value:
            i += 2
            continue
        if arg.startswith(("--", "-W", "-X")):  # long options; values glued to -W/-X
            i += 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            if any(letter in stop_letters for letter in arg[1:]):
                return ""
            i += 1
            continue
        return "" if arg == "-" else arg
    return ""


def _file_stat(path: str) -> FactDict:
    st = os.stat(path)
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime": st.st_mtime}


def _kind(argv: List[str], pid: str) -> str:
    name = os.path.basename(argv[0]).lstrip("-")
    try:
        exe = os.path.basename(os.readlink("/proc/%s/exe" % pid))
    except OSError:
        exe = ""
    if name in SHELLS or exe in SHELLS:
        return "shell"
    for word in (name, exe):
        if word == "python" or (word.startswith("python") and word[6:].replace(".", "").isdigit()):
            return "python"
    return ""


def _open_script(pid: str, script: str, resolved: str) -> Optional[FactDict]:
    """The fd through which a shell reads its script (bash: 255; dash: 10 and up)."""
    fd_dir = "/proc/%s/fd" % pid
    best = None
    for fd in sorted(os.listdir(fd_dir), key=int, reverse=True):
        if int(fd) < 3:
            continue
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        deleted = target.endswith(" (deleted)")
        path = target[: -len(" (deleted)")] if deleted else target
        if path != resolved and os.path.basename(path) != os.path.basename(script):
            continue  # another open file (a symlinked script shows its target: resolved)
        opened = _file_stat(os.path.join(fd_dir, fd))
        pos = None
        for line in _read("/proc/%s/fdinfo/%s" % (pid, fd)).splitlines():
            if line.startswith("pos:"):
                pos = int(line.split()[1])
        best = {"fd": int(fd), "path": path, "deleted": deleted, "stat": opened, "pos": pos}
        if fd == "255":
            break
    return best


def live_scripts(request: FactDict, probe: "Probe") -> List[FactDict]:
    roots = [os.path.realpath(r).rstrip("/") + "/" for r in request.get("script_roots") or []]
    tick = float(os.sysconf("SC_CLK_TCK"))
    uptime = float(_read("/proc/uptime").split()[0])
    now = time.time()
    found = []
    denied = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        if probe.limit(1) < 1:
            probe.note("live_scripts", "stopped at the probe's time budget; the list is partial")
            break
        try:
            argv = [a for a in _read("/proc/%s/cmdline" % pid).split("\0") if a]
            kind = _kind(argv, pid) if argv else ""
            if not kind:
                continue
            if kind == "shell":
                script = _script_arg(argv, SHELL_OPTS_WITH_VALUE, "cs")
            else:
                script = _script_arg(argv, PYTHON_OPTS_WITH_VALUE, "cm")
            if not script or script.startswith(("/dev/", "/proc/")):
                continue  # process substitution and the like: no file to edit
            parent, started = _proc_stat(pid, uptime, now, tick)
            if parent == os.getpid():
                continue  # the probe's own helpers (the torch check)
            cwd = os.readlink("/proc/%s/cwd" % pid)
            resolved = os.path.realpath(os.path.join(cwd, script))
            opened = _open_script(pid, script, resolved) if kind == "shell" else None
            path = opened["path"] if opened else os.path.join(cwd, script)
            path = os.path.normpath(path)
            if roots and not any(path.startswith(r) for r in roots):
                continue
            fact = {
                "pid": int(pid),
                "kind": kind,
                "command": " ".join(argv)[:300],
                "script": path,
                "started_at": started,
                "open": opened,
                "file": None,
            }
            try:
                fact["file"] = _file_stat(path)
            except OSError:
                fact["file"] = None  # removed or renamed away: the process keeps its copy
            found.append(fact)
        except PermissionError:
            denied += 1
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we looked
    if denied:
        probe.note("live_scripts", "%d processes of other users are not readable" % denied)
    return found


def host() -> FactDict:
    uname = os.uname()
    release = {}
    try:
        for line in _read("/etc/os-release").splitlines():
            key, _, value = line.partition("=")
            if key in ("ID", "VERSION_ID", "PRETTY_NAME"):
                release[key] = value.strip().strip('"')
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "kernel": uname.release,
        "machine": uname.machine,
        "uptime_s": float(_read("/proc/uptime").split()[0]),
        "os_release": release,
        "uid": os.getuid(),
        "home": os.path.expanduser("~"),
        "python": sys.version.split()[0],
    }


class Probe:
    """Reads every fact; each has its own budget, all within the request's ``budget_s``, so the
    answer is printed before the server-side timeout even when a tool hangs."""

    def __init__(self, request: FactDict) -> None:
        self.request = request
        self.unreadable = []  # type: List[Dict[str, str]]
        self.deadline = time.time() + float(request.get("budget_s") or 45)

    def limit(self, own: float) -> float:
        """Seconds a fact may still take: its own budget, cut to what the probe has left."""
        return max(0.0, min(own, self.deadline - time.time()))

    def note(self, fact: str, why: Any) -> None:
        text = why if isinstance(why, str) else _why(why)
        self.unreadable.append({"fact": fact, "why": text})

    def read(self, name: str, func: Any, *args: Any) -> Any:
        try:
            return func(*args)
        except Exception as exc:  # one missing fact must not lose the others
            self.note(name, exc)
            return None

    def gather(self) -> FactDict:
        request = self.request
        wanted = set(
            request.get("sections")
            or (
                "host",
                "paths",
                "caches",
                "memory",
                "cpu",
                "shm",
                "tools",
                "gpu",
                "torch",
                "live_scripts",
            )
        )
        began = time.time()
        torch = self.read("torch", torch_start, request) if "torch" in wanted else None
        gpu = self.read("gpu", gpu_start, request) if "gpu" in wanted else None
        mounts = self.read("mounts", read_mounts) or []
        facts = {"schema": SCHEMA, "probe": {"kind": "python", "time": began}}  # type: FactDict
        if "host" in wanted:
            facts["host"] = self.read("host", host)
        if "paths" in wanted:
            facts["root"] = self.read("root", place, "/", mounts)
            facts["paths"] = {}
            for role, path in sorted((request.get("paths") or {}).items()):
                facts["paths"][role] = self.read("paths." + role, place, path, mounts)
        if "caches" in wanted:
            facts["caches"] = self.read("caches", caches, request, mounts, self)
        if "memory" in wanted:
            facts["memory"] = self.read("memory", memory, mounts)
        if "cpu" in wanted:
            facts["cpu"] = self.read("cpu", cpu, mounts)
        if "shm" in wanted:
            facts["shm"] = self.read("shm", space, "/dev/shm")
        if "tools" in wanted:
            facts["tools"] = {name: shutil.which(name) for name in TOOLS}
        if "live_scripts" in wanted:
            facts["live_scripts"] = self.read("live_scripts", live_scripts, request, self)
        if "gpu" in wanted:
            facts["gpu"] = self.read("gpu", gpu_finish, gpu, self) if gpu else None
        if "torch" in wanted:
            facts["torch"] = (
                self.read("torch", torch_finish, torch, request, self) if torch else None
            )
        facts["probe"]["seconds"] = time.time() - began
        facts["unreadable"] = self.unreadable
        return facts


def main(argv: List[str]) -> int:
    request = json.loads(argv[0]) if argv else {}
    facts = Probe(request).gather()
    sys.stdout.write(json.dumps(facts, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

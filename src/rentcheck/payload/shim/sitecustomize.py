"""rentcheck's step shim, imported by Python's ``site`` module because rentcheck puts this
directory first on ``PYTHONPATH`` of the runs it supervises (``rentcheck smoke`` / ``resume``).

It must work in the user's interpreter, which may not have rentcheck installed: stdlib only,
Python 3.8 syntax, and it never raises into the user's program. What it does:

* imports the ``sitecustomize`` it shadows (Debian's, a venv's, the user's), so that one still
  runs exactly as without rentcheck;
* waits for ``import torch`` (a ``sys.meta_path`` finder that a ``find_spec`` probe does not
  use up; a process that never imports torch pays one JSON line), then registers torch's
  *global* optimizer step hooks, which fire for every ``torch.optim.Optimizer`` without
  touching user objects, wraps ``torch.autograd.backward``, and wraps ``torch.save`` (paths,
  files and buffers), safetensors' ``save_file`` and ``os.rename``/``os.replace`` (a rename
  after a save publishes a checkpoint: ``last.pt.tmp -> last.pt``, ``tmp-checkpoint-8/``);
* counts optimizer steps: every torch.optim step (a step that changed no parameter is
  reported as such), and, for loops with no torch.optim step, parameters changed in place
  between two backward passes (hand-written SGD through ``p.data``, a home-made optimizer);
* records each step's loss (the scalar passed to ``backward``), checks that parameters stay
  finite, stops cleanly after N steps, or pauses at a step or in the middle of a checkpoint
  write so that the supervisor can kill the run at an exact point;
* with ``RENTCHECK_SHIM_TRAINING_ARGS``, sets transformers' TrainingArguments fields (a
  preset's limits for a script that builds them from its own flags);
* reports everything as JSON lines appended to ``$RENTCHECK_SHIM_REPORT``.

Settings come from ``RENTCHECK_SHIM_*`` variables; without them the shim only chains.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_ENV = os.environ
_PREFIX = "RENTCHECK_SHIM_"
_HERE = os.path.dirname(os.path.realpath(__file__))
_EXIT_NONFINITE = 3
_EXIT_PAUSE_TIMEOUT = 75


class _ShimState:
    def __init__(self) -> None:
        self.steps = 0  # optimizer steps taken in this process
        self.losses: list[float] = []  # scalars passed to backward() since the last step
        self.first_save_step: int | None = None  # steps done at the first checkpoint write
        self.saved_at: int | None = None  # step of the newest save: renames after it publish
        self.pause_next_open = False  # a buffered save is due to be cut in its file write
        self.real_open: Any = None
        self.pause_at: int | None = None  # pause before the step after this one
        self.paused = False
        self.params: list[list[Any]] = []  # per optimizer, for the exit digest
        self.optimizers: dict[int, int] = {}  # id(optimizer) -> index into params
        self.fd: int | None = None
        self.fd_pid = 0
        self.chained: str | None = None
        self.torch_version: str | None = None  # torch imported and wrapped, in this process
        # (modules imported before it, key, value or None): the program's own env changes
        self.env_changes: list[tuple[int, str, str | None]] = []
        self.optim_seen = False  # a torch.optim step hook fired: no need to watch parameters
        self.watched: list[Any] = []  # the leaves of the first backward's graph (parameters)
        self.snapshot: list[Any] | None = None  # (version, sample) per watched leaf
        self.before_step: list[Any] | None = None  # params and fingerprints, first steps only


_State = _ShimState()


def _setting(name: str) -> str:
    return _ENV.get(_PREFIX + name, "")


def _emit(event: str, **fields: Any) -> None:
    """One JSON line per event, appended with a single write so processes never interleave."""
    path = _setting("REPORT")
    if not path:
        return
    try:
        import json

        if _State.fd is None or _State.fd_pid != os.getpid():
            _State.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            _State.fd_pid = os.getpid()
        fields.update(e=event, pid=os.getpid())
        os.write(_State.fd, (json.dumps(fields, default=str) + "\n").encode())
    except Exception:  # noqa: BLE001, S110 - reporting must never break the user's program
        pass


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib would be one more import in every user process
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed stream is no reason to fail here
            pass


def _chain_shadowed_sitecustomize() -> str | None:
    """Import the ``sitecustomize`` this module hides, as if rentcheck were not there."""
    me = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]
    try:
        import importlib

        chained = importlib.import_module("sitecustomize")
    except ImportError as exc:
        if exc.name != "sitecustomize":
            _report_chain_error()
        chained = None
    except Exception:  # noqa: BLE001 - site.py itself only warns about a broken one
        _report_chain_error()
        chained = None
    if chained is None:
        if me is not None:
            sys.modules["sitecustomize"] = me
        return None
    return str(getattr(chained, "__file__", "") or "")


def _report_chain_error() -> None:
    import traceback

    sys.stderr.write("Error in sitecustomize (chained by rentcheck's shim):\n")
    traceback.print_exc()


class _ImportHook:
    """Waits for ``import torch`` (and ``safetensors.torch``) and wraps them once loaded.

    A probe (``importlib.util.find_spec("torch")``, as datasets and transformers do before
    importing) consumes nothing: the wrap happens when a loader executes the module, and
    every new spec is wrapped until one does. A module some other finder loaded is wrapped at
    the next import this finder sees after it finished initializing. The finder stays on
    ``sys.meta_path`` (removing it while importlib iterates that list would skip a finder)."""

    def __init__(self) -> None:
        self.pending = {"torch": _install, "safetensors.torch": _wrap_safetensors}
        if _setting("TRAINING_ARGS"):
            self.pending["transformers.training_args"] = _limit_training_args

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if self.pending:
            self.install_loaded()
        install = self.pending.get(fullname)
        if install is None:
            return None
        spec = None
        for finder in list(sys.meta_path):  # the real finders answer; this one must not recurse
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module
        hook = self

        def exec_module(module: Any) -> None:
            original(module)
            if hook.pending.pop(fullname, None) is None:
                return  # wrapped already (another spec of the same module)
            if type(module).__name__ == "_LazyModule":
                # importlib.util.LazyLoader loads on first attribute access and makes the
                # module plain after this returns; plain now, so wrapping it reads real names.
                import types

                module.__class__ = types.ModuleType
            _safely(install, module)

        exec_module._rc = 1  # type: ignore[attr-defined]
        loader.exec_module = exec_module
        return spec

    def install_loaded(self) -> None:
        for name in list(self.pending):
            module = sys.modules.get(name)
            spec = getattr(module, "__spec__", None)
            if module is None or getattr(spec, "_initializing", False):
                continue
            if getattr(getattr(getattr(spec, "loader", None), "exec_module", None), "_rc", 0):
                continue  # loaded through this finder's wrap: it installs when the code ran
            _safely(self.pending.pop(name), module)


def _safely(install: Any, module: Any) -> None:
    try:
        install(module)
    except Exception as exc:  # noqa: BLE001 - a shim bug must not break training
        _emit("shim-error", error=f"{type(exc).__name__}: {exc}")


def _install(torch: Any) -> None:
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    register_optimizer_step_pre_hook(_before_step)
    register_optimizer_step_post_hook(_after_step)
    _wrap_save(torch)
    _wrap_renames()
    _wrap_backward(torch)
    if _setting("DIGEST") == "1" or _setting("REPORT"):
        import atexit

        atexit.register(_at_exit)
    _State.torch_version = str(torch.__version__)
    _emit("torch", version=_State.torch_version)


_CHECK_MOVED = 3  # the first optimizer steps are checked for changing any parameter


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    _State.optim_seen = True
    _State.snapshot = None
    _stop_or_pause()
    if _State.steps < _CHECK_MOVED:
        try:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            _State.before_step = [params, [_fingerprint(p) for p in params]]
        except Exception:  # noqa: BLE001 - evidence only
            _State.before_step = None


def _stop_or_pause() -> None:
    """Called as step N+1 begins: stop after N steps, or hold still for a kill."""
    stop_after = _setting("STOP_AFTER")
    if stop_after and _State.steps >= int(stop_after):
        # Stopping before step N+1, not after step N, lets the program log step N itself.
        _emit("stop", steps=_State.steps)
        _flush_stdio()
        os._exit(0)
    if _State.pause_at is not None and _State.steps >= _State.pause_at:
        _State.pause_at = None
        _pause("step")


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    params = [p for group in optimizer.param_groups for p in group["params"]]
    moved = None
    before, _State.before_step = _State.before_step, None
    if before is not None:
        try:
            moved = _moved(before[0], before[1])
        except Exception:  # noqa: BLE001 - evidence only
            moved = None
    _count_step(id(optimizer), params, "optimizer", moved)


def _moved(params: list[Any], fingerprints: list[Any]) -> bool:
    """Whether any parameter changed since its fingerprint (a step with no gradient, or a
    zero learning rate, changes none)."""
    import torch

    for index, (version, sample) in enumerate(fingerprints):
        now_version, now_sample = _fingerprint(params[index])
        if now_version != version or (sample is not None and not torch.equal(now_sample, sample)):
            return True
    return False


def _count_step(key: int, params: list[Any], how: str, moved: bool | None = True) -> None:
    _State.steps += 1
    index = _State.optimizers.setdefault(key, len(_State.params))
    if index == len(_State.params):
        _State.params.append(params)
    else:
        _State.params[index] = params
    losses, _State.losses = _State.losses, []
    import time  # built in: no file is read

    # t, c (wall and this process's CPU seconds): the supervisor tells a run still stepping,
    # or busy between two steps, at its time limit from a hung one.
    now, cpu = time.monotonic(), time.process_time()
    _emit("step", n=_State.steps, loss=losses, by=how, moved=moved, t=now, c=cpu)
    if _State.steps == 1 and _setting("MODULES") == "1":
        _emit_modules()
    if _setting("FINITE") == "1":
        _check_finite(params)


def _check_finite(params: list[Any]) -> None:
    import torch

    for position, param in enumerate(params):
        if not bool(torch.isfinite(param.detach()).all()):
            _emit(
                "nonfinite",
                step=_State.steps,
                param=position,
                shape=list(param.shape),
                dtype=str(param.dtype),
            )
            _flush_stdio()
            os._exit(_EXIT_NONFINITE)


def _pause(reason: str, **fields: Any) -> None:
    """Hold the process still until the supervisor has signalled it (or released it)."""
    import time

    _State.paused = True
    _emit("pause", reason=reason, step=_State.steps, **fields)
    _flush_stdio()
    release = _setting("RELEASE")
    deadline = time.monotonic() + float(_setting("PAUSE_TIMEOUT") or 600)
    while time.monotonic() < deadline:
        # Released after a catchable signal, so a program that saves on SIGTERM can go on.
        if release and os.path.exists(release):
            return
        time.sleep(0.005)
    _emit("pause-timeout")
    os._exit(_EXIT_PAUSE_TIMEOUT)


def _wrap_backward(torch: Any) -> None:
    """Records each backward's loss, and sees steps no torch.optim hook reports: parameters
    changed in place between two backwards (``p.data.add_(p.grad, alpha=-lr)``, an optimizer
    that is no ``torch.optim.Optimizer``). ``Tensor.backward`` calls this function too."""
    original = torch.autograd.backward

    def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.optim_seen:
            try:
                _detect_manual_step(torch)
            except Exception as exc:  # noqa: BLE001 - a shim bug must not break training
                _emit("shim-error", error=f"manual step: {type(exc).__name__}: {exc}")
        if _setting("LOSSES") == "1":
            try:
                if isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
                    _State.losses.append(float(tensors.detach()))
            except Exception:  # noqa: BLE001, S110 - e.g. a meta tensor; only evidence
                pass
        result = original(tensors, *args, **kwargs)
        if not _State.optim_seen:
            try:
                _watch_leaves(torch, tensors)
            except Exception as exc:  # noqa: BLE001 - a shim bug must not break training
                _emit("shim-error", error=f"watch: {type(exc).__name__}: {exc}")
        return result

    torch.autograd.backward = backward


_MAX_GRAPH_NODES = 200000
_SAMPLES = 16  # values per parameter compared between backwards


def _watch_leaves(torch: Any, tensors: Any) -> None:
    """After a backward: remember the graph's leaves (once) and a cheap fingerprint of each."""
    if not _State.watched:
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ())
        todo = [getattr(t, "grad_fn", None) for t in roots]
        seen: set[int] = set()
        leaves: list[Any] = []
        while todo and len(seen) < _MAX_GRAPH_NODES:
            node = todo.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)  # AccumulateGrad: a leaf
            if variable is not None:
                leaves.append(variable)
            todo.extend(fn for fn, _ in getattr(node, "next_functions", ()))
        _State.watched = leaves
    _State.snapshot = [_fingerprint(p) for p in _State.watched]


def _fingerprint(param: Any) -> tuple[int, Any]:
    try:
        plain = param.detach()
        if type(plain).__name__ != "Tensor":  # a DTensor or subclass: slicing may communicate
            return param._version, None
        flat = plain.reshape(-1)
        stride = max(1, flat.numel() // _SAMPLES)
        # ``.data`` writes do not move ``_version``: a few values show them.
        sample = flat[::stride].clone()
    except Exception:  # noqa: BLE001 - a sparse or meta leaf: its version counter only
        sample = None
    return param._version, sample


def _detect_manual_step(torch: Any) -> None:
    """Before a backward: the watched parameters changed since the last one, so a step was
    taken that no optimizer hook reported (counted as it ends, like a hooked step)."""
    before, _State.snapshot = _State.snapshot, None
    if not before:
        return
    for index, (version, sample) in enumerate(before):  # zip(strict=) is 3.10+
        now_version, now_sample = _fingerprint(_State.watched[index])
        moved = sample is not None and not torch.equal(now_sample, sample)
        if now_version != version or moved:
            _count_step(-1, list(_State.watched), "parameters")
            _stop_or_pause()
            return


def _limit_training_args(module: Any) -> None:
    """Sets transformers' TrainingArguments fields (max_steps, save_steps, ...) as each one is
    made: the limits of a script whose own argparse builds them (no flags added)."""
    import json

    limits = json.loads(_setting("TRAINING_ARGS"))
    cls = module.TrainingArguments
    original = cls.__post_init__

    def post_init(self: Any, *args: Any, **kwargs: Any) -> Any:
        for key, value in limits.items():
            if hasattr(self, key):  # a field this transformers version has
                setattr(self, key, value)
        _emit("training-args", fields=sorted(limits))
        return original(self, *args, **kwargs)

    cls.__post_init__ = post_init


class _PausingWriter:
    """A file stand-in for torch.save: after the first chunk is on disk, the process pauses."""

    def __init__(self, target: Any, dest: str | None) -> None:
        self._target = target
        self._dest = dest

    def write(self, data: Any) -> Any:
        if _State.paused:
            return self._target.write(data)
        # Half of the first chunk on disk, then hold: one big write (a buffered save) is cut
        # in the middle like a chunked one.
        view = memoryview(data).cast("B")
        half = len(view) // 2
        self._target.write(view[:half])
        self._target.flush()
        _pause("save", dest=self._dest, bytes=half)
        self._target.write(view[half:])
        return len(view)

    def flush(self) -> Any:
        return self._target.flush()

    # Looked up on the type, not through __getattr__: `with open(...) as f` needs them here.
    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._target.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def _destination(f: Any) -> tuple[str | None, bool]:
    """(absolute path written, whether it is a real file a kill can cut)."""
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.path.abspath(os.fsdecode(f)), True
    try:
        f.fileno()
    except Exception:  # noqa: BLE001 - BytesIO, fsspec buffers: nothing on disk to cut
        return None, False
    name = getattr(f, "name", None)
    return (os.path.abspath(name) if isinstance(name, str) else None), True


def _wrap_save(torch: Any) -> None:
    original = torch.serialization.save

    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        dest, real_file = _destination(f)
        step = _State.steps
        cut = step >= 1 and _should_pause_in_save(step)
        if cut and not real_file:
            # Lightning and others save into a buffer and write its bytes to the file after:
            # the cut happens in that write.
            _arm_open()
        elif cut:
            if isinstance(f, (str, bytes, os.PathLike)):
                # torch would write a path from C++; a file object lets the shim see the bytes.
                with open(f, "wb") as handle:
                    writer = _PausingWriter(handle, dest)
                    return _recorded(
                        lambda: original(obj, writer, *args, **kwargs), dest, step, "torch"
                    )
            f = _PausingWriter(f, dest)
        kind = "torch" if real_file else "buffer"
        return _recorded(lambda: original(obj, f, *args, **kwargs), dest, step, kind)

    torch.save = save
    torch.serialization.save = save


def _wrap_safetensors(module: Any) -> None:
    original = module.save_file

    def save_file(tensors: Any, filename: Any, metadata: Any = None, *rest: Any, **kw: Any) -> Any:
        dest = os.path.abspath(os.fsdecode(filename))
        step = _State.steps
        if step >= 1 and _should_pause_in_save(step) and not rest and not kw:
            # The Rust writer cannot be held halfway; the same bytes through a Python file can.
            data = module.save(tensors, metadata=metadata)

            def write() -> None:
                with open(filename, "wb") as handle:
                    _PausingWriter(handle, dest).write(data)

            return _recorded(write, dest, step, "safetensors")

        def call() -> Any:
            return original(tensors, filename, metadata, *rest, **kw)

        return _recorded(call, dest, step, "safetensors")

    module.save_file = save_file


def _arm_open() -> None:
    """The next file opened for binary writing (in this step) is cut halfway by the shim."""
    import builtins
    import io

    if _State.real_open is None:
        _State.real_open = builtins.open
    real_open = _State.real_open
    armed_at = _State.steps

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        if _State.steps != armed_at:
            builtins.open = io.open = real_open
        elif "b" in mode and ("w" in mode or "x" in mode) and not _State.paused:
            builtins.open = io.open = real_open
            dest = os.path.abspath(os.fsdecode(file)) if not isinstance(file, int) else None
            return _PausingWriter(handle, dest)
        return handle

    builtins.open = io.open = open_


def _wrap_renames() -> None:
    """A rename after a save publishes a checkpoint (temp file or directory -> final name)."""
    for name in ("rename", "replace"):
        original = getattr(os, name)

        def renamed(src: Any, dst: Any, *args: Any, _original: Any = original, **kw: Any) -> Any:
            result = _original(src, dst, *args, **kw)
            if _State.saved_at is not None and _State.saved_at == _State.steps:
                try:  # noqa: SIM105 - contextlib would be one more import in every user process
                    _emit(
                        "publish",
                        step=_State.steps,
                        src=os.path.abspath(os.fsdecode(src)),
                        dest=os.path.abspath(os.fsdecode(dst)),
                        dir=os.path.isdir(dst),
                    )
                except Exception:  # noqa: BLE001, S110 - evidence only; no contextlib
                    pass
            return result

        setattr(os, name, renamed)


def _should_pause_in_save(step: int) -> bool:
    if _State.first_save_step is None:
        _State.first_save_step = step
        if _setting("PAUSE") == "step":
            # Half an interval after the first checkpoint: between that one and the next, and
            # before the last step (``STOP_AFTER``), so the relaunch has steps left to take.
            last = int(_setting("STOP_AFTER") or 0)
            pause_at = step + max(1, step // 2)
            if last:
                pause_at = min(pause_at, last - 1)
            if pause_at > step:
                _State.pause_at = pause_at
            else:
                _emit("no-kill", reason="step", step=step, last=last)
        return False
    # The first write of the *next* checkpoint, so an older complete one exists to fall back to.
    return _setting("PAUSE") == "save" and step > _State.first_save_step and not _State.paused


def _recorded(call: Any, dest: str | None, step: int, kind: str) -> Any:
    try:
        result = call()
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        _emit("save", step=step, dest=dest, kind=kind, ok=False, error=error)
        raise
    _State.saved_at = step
    _emit("save", step=step, dest=dest, kind=kind, ok=True)
    return result


def _at_exit() -> None:
    if not _State.optim_seen and _State.snapshot:
        try:  # the last hand-written update happened after the last backward
            import torch

            _detect_manual_step(torch)
        except Exception:  # noqa: BLE001, S110 - evidence only
            pass
    digest = None
    if _setting("DIGEST") == "1" and _State.params:
        try:
            digest = _weights_digest()
        except Exception as exc:  # noqa: BLE001 - report, never fail the exit
            _emit("shim-error", error=f"digest: {type(exc).__name__}: {exc}")
    _emit("exit", steps=_State.steps, digest=digest)


def _weights_digest() -> str:
    import hashlib

    digest = hashlib.sha256()
    for params in _State.params:
        for param in params:
            tensor = param.detach().to("cpu").contiguous()
            digest.update(f"{tensor.dtype}|{tuple(tensor.shape)}|".encode())
            digest.update(bytes(tensor.clone().untyped_storage()))
    return digest.hexdigest()


def _watch_environment(event: str, args: Any) -> None:
    """Audit hook: the program's own environment changes, where they fell among its imports.

    A change made while a module is being imported (numpy's ``OPENBLAS_MAIN_FREE``, torch's
    cache dir) belongs to that import and happens again wherever the module is imported; a
    change made by the program's code (or a library call it made outside an import) is
    recorded with the number of modules imported before it."""
    if event not in ("os.putenv", "os.unsetenv") or not args:
        return
    try:
        frame: Any = sys._getframe(1)
        own = os.path.realpath(sys.path[0] or os.curdir) + os.sep
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<frozen importlib"):
                return  # an import's own side effect
            if not name.startswith("<") and os.path.realpath(name).startswith(own):
                break  # (``<frozen os>`` and ``<string>`` are no files of the project)
            frame = frame.f_back
        value = os.fsdecode(args[1]) if event == "os.putenv" and len(args) > 1 else None
        _State.env_changes.append((len(sys.modules), os.fsdecode(args[0]), value))
    except Exception:  # noqa: BLE001, S110 - evidence only
        pass


def _emit_modules() -> None:
    """What this run had imported by its first optimizer step, in import order, with the files
    they came from (outside the script's directory), and the environment changes of its own
    code among them: rentcheck's fork server replays this for relaunches (``zygote_serve.py``).
    """
    own = os.path.realpath(sys.path[0] or os.curdir) + os.sep
    changes = list(_State.env_changes)
    entries: list[dict[str, Any]] = []
    for position, name in enumerate(list(sys.modules)):
        while changes and changes[0][0] <= position:
            _, key, value = changes.pop(0)
            entries.append({"env": key, "value": value})
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if name in ("__main__", "__mp_main__") or module is None:
            continue
        if isinstance(where, str) and os.path.realpath(where).startswith(own):
            continue  # the project's own modules run with the script
        entries.append({"name": name, "file": where if isinstance(where, str) else None})
    _emit("modules", modules=entries)


def rentcheck_forked() -> None:
    """Called by rentcheck's fork server in a forked relaunch: a fresh process to report."""
    steps_hooked = _State.torch_version
    fresh = _ShimState()
    fresh.chained, fresh.torch_version = _State.chained, steps_hooked
    fresh.real_open = _State.real_open
    _State.__dict__.update(fresh.__dict__)
    _emit("start", argv=list(sys.argv), ppid=os.getppid(), chained=_State.chained, forked=True)
    if steps_hooked is not None:
        _emit("torch", version=steps_hooked)


def _main() -> None:
    chained = _chain_shadowed_sitecustomize()
    if not any(key.startswith(_PREFIX) for key in _ENV):
        return
    _State.chained = chained
    if _setting("MODULES") == "1":
        sys.addaudithook(_watch_environment)
    _emit("start", argv=list(sys.argv), ppid=os.getppid(), chained=chained)
    hook = _ImportHook()
    for name in list(hook.pending):
        if name in sys.modules:  # imported by the chained sitecustomize
            hook.pending.pop(name)(sys.modules[name])
    if hook.pending:
        sys.meta_path.insert(0, hook)


_main()

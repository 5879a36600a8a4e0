"""``[tool.rentcheck.smoke]`` / ``[tool.rentcheck.resume]`` -> validated run settings.

``command`` is a string (split like a shell would) or a list, run as typed: in a scratch copy
of the project (see ``scratch.py``), starting at the same place relative to the project root
(the config file's directory) as the person running rentcheck. A command that starts with
``python``/``python3`` runs the project's interpreter (see ``interpreter.py``; ``python`` in
the config names another one). ``args`` are appended after the preset's args. In ``command``,
``args`` and ``env`` values, ``{python}`` is that interpreter, ``{root}`` the run's project root
(the scratch copy), ``{steps}`` the step count and, for resume, ``{checkpoint_every}`` a third
of it. ``link`` names untracked paths (data dirs) that the copy links to instead of copying.

``resume`` falls back to ``smoke``'s ``command``, ``env``, ``offline``, ``shim``, ``timeout``,
``preset``, ``python`` and ``link``.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rentcheck.config import Config, check_section_keys, section_error
from rentcheck.run.interpreter import BARE_NAMES, Interpreter, find_interpreter
from rentcheck.run.logparse import DEFAULT_DIGEST_PATTERNS, DEFAULT_STEP_PATTERNS, compile_patterns
from rentcheck.run.presets import PRESETS, builds_its_own_training_args, training_args_limits
from rentcheck.run.rules import SMOKE_CLASSES

__all__ = [
    "RESUME_KEYS",
    "SMOKE_KEYS",
    "ResumeSettings",
    "RunSettings",
    "SmokeSettings",
    "resume_settings",
    "smoke_settings",
]

_COMMON = ("command", "args", "env", "steps", "timeout", "offline", "shim", "preset", "step-regex",
           "python", "link")  # fmt: skip
SMOKE_KEYS = (*_COMMON, "allow")
RESUME_KEYS = (*_COMMON, "allow", "checkpoint-dir", "signals", "kill-during-save", "rtol", "atol",
               "mode", "band", "digest-regex", "fork-server")  # fmt: skip
_INHERITED = ("command", "env", "offline", "shim", "timeout", "preset", "python", "link")
SHIM_MODES = ("auto", "on", "off")
RESUME_MODES = ("exact", "continues")
FORK_SERVER_MODES = ("auto", "off")


@dataclass(frozen=True)
class RunSettings:
    argv: tuple[str, ...]  # {root} still in it: each run has its own scratch copy
    env: Mapping[str, str]  # the project's own env table, on top of rentcheck's block
    steps: int
    timeout: float
    offline: bool
    shim: str  # auto | on | off
    root: str  # the user's project root: copied for each run, watched by the sandbox check
    excludes: tuple[str, ...]
    step_patterns: tuple[re.Pattern[str], ...]
    preset: str | None
    interpreter: Interpreter
    links: tuple[str, ...]  # relative to root: linked into the copy, not copied
    cwd: str  # where the user ran rentcheck; the run starts at the same relative place
    # RENTCHECK_SHIM_* settings every run of these settings gets (a preset's in-process limits)
    shim_limits: Mapping[str, str] = field(default_factory=dict)

    def argv_in(self, root: str) -> tuple[str, ...]:
        """The command line of a run whose project root (scratch copy) is ``root``."""
        return tuple(a.replace("{root}", root) for a in self.argv)

    def env_in(self, root: str) -> dict[str, str]:
        return {k: v.replace("{root}", root) for k, v in self.env.items()}


@dataclass(frozen=True)
class SmokeSettings(RunSettings):
    allow: frozenset[str] = frozenset()  # waived failure classes


@dataclass(frozen=True)
class ResumeSettings(RunSettings):
    # Relative to where the run starts; None: found from the shim's checkpoint writes.
    checkpoint_dir: str | None = None
    signals: tuple[int, ...] = (signal.SIGKILL, signal.SIGTERM)
    kill_during_save: bool = True
    rtol: float = 0.0
    atol: float = 0.0
    # exact: every step's loss equals the uninterrupted run's (deterministic loops);
    # continues: resumed at the checkpoint + 1 and each loss within `band` (relative) of it.
    mode: str = "exact"
    band: float = 0.5
    allow: frozenset[str] = frozenset()  # resume codes reported as notes
    digest_patterns: tuple[re.Pattern[str], ...] = ()
    # auto: relaunches of `python script.py` fork from a warmed interpreter (run/forking.py).
    fork_server: str = "auto"


class _Reader:
    """Typed access to one section's merged table, with errors that name key and file."""

    def __init__(self, config: Config, section: str, table: Mapping[str, Any]) -> None:
        self.config, self.section, self.table = config, section, table

    def error(self, key: str, problem: str, hint: str = "") -> Exception:
        return section_error(self.config, self.section, key, problem, hint)

    def strings(self, key: str, default: Sequence[str] = ()) -> tuple[str, ...]:
        value = self.table.get(key, default)
        if isinstance(value, str):
            return tuple(shlex.split(value)) if key == "command" else (value,)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self.error(key, "must be a string or a list of strings")
        return tuple(value)

    def number(self, key: str, default: float, minimum: float, integer: bool = False) -> float:
        value: Any = self.table.get(key, default)
        is_number = isinstance(value, int) or (not integer and isinstance(value, float))
        if isinstance(value, bool) or not is_number or value < minimum:
            kind = "an integer" if integer else "a number"
            raise self.error(key, f"must be {kind} >= {minimum}, got {value!r}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return value

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self.table.get(key, default)
        if isinstance(value, bool) and "off" in choices:
            # YAML reads a bare `off`/`on` as a boolean (`shim: off`, `fork-server: off`).
            value = ("on" if "on" in choices else "auto") if value else "off"
        if value not in choices:
            raise self.error(key, f"is {value!r}", "use one of: " + ", ".join(choices))
        return str(value)

    def mapping(self, key: str) -> dict[str, str]:
        value = self.table.get(key, {})
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.error(
                key, "must be a table of NAME = value", 'e.g. env = {OMP_NUM_THREADS = "1"}'
            )
        return {k: "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in value.items()}  # fmt: skip

    def patterns(self, key: str, defaults: Sequence[str], what: str) -> tuple[re.Pattern[str], ...]:
        texts = self.strings(key, defaults)
        try:
            return compile_patterns(texts, what)
        except (re.error, ValueError) as exc:
            raise self.error(key, f"bad regex: {exc}") from None


def _merged(
    config: Config, section: str, keys: Sequence[str], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    table = dict(check_section_keys(config, section, keys))
    table.update({k: v for k, v in overrides.items() if v is not None})
    return table


def _common(reader: _Reader, section: str, default_steps: int) -> dict[str, Any]:
    preset_name = reader.table.get("preset")
    if preset_name is not None and preset_name not in PRESETS:
        raise reader.error(
            "preset", f"unknown preset {preset_name!r}", "use one of: " + ", ".join(PRESETS)
        )
    preset = PRESETS.get(str(preset_name)) if preset_name else None
    command = reader.strings("command")
    if not command:
        raise reader.error(
            "command",
            "is not set",
            f'set [tool.rentcheck.{section}] command = "python train.py" '
            f"(or `{section}:` in rentcheck.yaml), or pass one after `--`",
        )
    steps = int(reader.number("steps", default_steps, 1, integer=True))
    root = reader.config.root
    configured = reader.table.get("python")
    if configured is not None and not isinstance(configured, str):
        raise reader.error("python", "must be a path or a command name")
    interpreter = find_interpreter(root, configured)
    if isinstance(interpreter, str):
        raise reader.error("python", interpreter, "name the project's interpreter, e.g. "
                           "python = \".venv/bin/python\", or leave it out")  # fmt: skip
    if command[0] in BARE_NAMES:
        command = (interpreter.path, *command[1:])
    values = {
        "{python}": interpreter.path,
        "{steps}": str(steps),
        "{checkpoint_every}": str(max(1, steps // 3)),
    }

    def fill(text: str) -> str:
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        return text

    if preset is not None and preset.name == "hf-trainer":
        script = _script_text(command, root)
        if script is not None and builds_its_own_training_args(script):
            # Its argparse would reject TrainingArguments flags: the limits go in-process.
            preset = PRESETS["hf-trainer-argparse"]
    shim_limits: dict[str, str] = {}
    if preset is not None and preset.in_process:
        import json

        limits = training_args_limits(section, steps)
        shim_limits["RENTCHECK_SHIM_TRAINING_ARGS"] = json.dumps(limits, sort_keys=True)
    preset_args = (
        (preset.smoke_args if section == "smoke" else preset.resume_args) if preset else ()
    )
    argv = tuple(fill(a) for a in (*command, *preset_args, *reader.strings("args")))
    env = {**(preset.env if preset else {}), **reader.mapping("env")}
    return {
        "argv": argv,
        "env": {k: fill(v) for k, v in env.items()},
        "steps": steps,
        "timeout": reader.number("timeout", 300.0, 1.0),
        "offline": reader.boolean("offline", True),
        "shim": reader.choice("shim", "auto", SHIM_MODES),
        "root": root,
        "excludes": reader.config.excludes,
        "step_patterns": reader.patterns("step-regex", DEFAULT_STEP_PATTERNS, "step"),
        "preset": preset.name if preset else None,
        "interpreter": interpreter,
        "links": _links(reader, root),
        "cwd": os.getcwd(),
        "shim_limits": shim_limits,
    }


def _script_text(command: Sequence[str], root: str) -> str | None:
    """The source of the command's ``*.py`` script (from here, else from the root)."""
    script = next((a for a in command[1:] if a.endswith(".py")), None)
    if script is None:
        return None
    for base in (os.getcwd(), root):
        path = os.path.join(base, script.replace("{root}", root))
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read(512 * 1024)
        except OSError:
            continue
    return None


def _links(reader: _Reader, root: str) -> tuple[str, ...]:
    links = []
    for entry in reader.strings("link"):
        rel = os.path.normpath(entry)
        if os.path.isabs(entry) or rel.split(os.sep)[0] == os.pardir or rel == os.curdir:
            raise reader.error(
                "link", f"{entry!r} must be a path inside the project", 'e.g. link = ["data"]'
            )
        if not os.path.exists(os.path.join(root, rel)):
            raise reader.error("link", f"{entry!r} does not exist in {root}")
        links.append(rel)
    return tuple(links)


def smoke_settings(config: Config, overrides: Mapping[str, Any] | None = None) -> SmokeSettings:
    reader = _Reader(config, "smoke", _merged(config, "smoke", SMOKE_KEYS, overrides or {}))
    allowed: set[str] = set()
    by_name = {rule.name: kind for kind, rule in SMOKE_CLASSES.items()}
    by_code = {rule.code: kind for kind, rule in SMOKE_CLASSES.items()}
    for entry in reader.strings("allow"):
        kind = entry if entry in SMOKE_CLASSES else by_name.get(entry) or by_code.get(entry.upper())
        if kind is None:
            raise reader.error(
                "allow",
                f"unknown failure class {entry!r}",
                "use one of: " + ", ".join(SMOKE_CLASSES),
            )
        allowed.add(kind)
    return SmokeSettings(**_common(reader, "smoke", 2), allow=frozenset(allowed))


def _resume_allow(reader: _Reader) -> frozenset[str]:
    """Resume codes (RC626) or names (resume-non-atomic-checkpoint) that only make a note."""
    from rentcheck.run.rules import RESUME_RULES

    by_key = {k: r.code for r in RESUME_RULES for k in (r.code, r.name)}
    allowed = set()
    for entry in reader.strings("allow"):
        code = by_key.get(entry.upper()) or by_key.get(entry)
        if code is None:
            raise reader.error(
                "allow", f"unknown resume rule {entry!r}", "use a code RC620-RC633 or its name"
            )
        allowed.add(code)
    return frozenset(allowed)


def _signal(reader: _Reader, name: str) -> int:
    upper = name.upper()
    full = upper if upper.startswith("SIG") else "SIG" + upper
    if full not in {"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}:
        raise reader.error("signals", f"unsupported signal {name!r}", "use SIGKILL and/or SIGTERM")
    return int(getattr(signal, full))


def resume_settings(config: Config, overrides: Mapping[str, Any] | None = None) -> ResumeSettings:
    smoke_table = check_section_keys(config, "smoke", SMOKE_KEYS)
    table = _merged(config, "resume", RESUME_KEYS, overrides or {})
    for key in _INHERITED:
        if key not in table and key in smoke_table:
            table[key] = smoke_table[key]
    reader = _Reader(config, "resume", table)
    common = _common(reader, "resume", 12)
    preset = PRESETS.get(str(common["preset"])) if common["preset"] else None
    ckpt_dir = reader.table.get("checkpoint-dir") or (preset and preset.checkpoint_dir) or None
    if ckpt_dir is not None and not isinstance(ckpt_dir, str):
        raise reader.error("checkpoint-dir", "must be a path relative to where the run starts")
    if ckpt_dir and (os.path.isabs(ckpt_dir) or ".." in ckpt_dir.replace("\\", "/").split("/")):
        raise reader.error(
            "checkpoint-dir",
            f"{ckpt_dir!r} must be relative to the run's working directory",
            "each run gets its own fresh working dir; point the command's checkpoint flag there",
        )
    signals = tuple(
        dict.fromkeys(_signal(reader, s) for s in reader.strings("signals", ("SIGKILL", "SIGTERM")))
    )
    kill_during_save = reader.boolean("kill-during-save", True)
    if not signals and not kill_during_save:
        raise reader.error(
            "signals", "is empty and kill-during-save is off", "nothing would be tested"
        )
    return ResumeSettings(
        **common,
        checkpoint_dir=ckpt_dir,
        signals=signals,
        kill_during_save=kill_during_save,
        rtol=reader.number("rtol", 0.0, 0.0),
        atol=reader.number("atol", 0.0, 0.0),
        allow=_resume_allow(reader),
        mode=reader.choice("mode", preset.resume_mode if preset else "exact", RESUME_MODES),
        band=reader.number("band", 0.5, 0.0),
        digest_patterns=reader.patterns("digest-regex", DEFAULT_DIGEST_PATTERNS, "digest"),
        fork_server=reader.choice("fork-server", "auto", FORK_SERVER_MODES),
    )

"""Settings: defaults < config file < ``RENTCHECK_*`` environment < command line.

The file is the nearest ``rentcheck.yaml``, ``.rentcheck.yaml`` or ``pyproject.toml`` with a
``[tool.rentcheck]`` table, searching upward from the start directory. Unknown keys and rule
codes are errors that name the key and the file, never silently ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from rentcheck.errors import ConfigError
from rentcheck.gates.table import GATES as _GATES
from rentcheck.gates.table import gate_sections as _gate_sections
from rentcheck.model import Rule, RuleStatus, Severity
from rentcheck.record import field, record, replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Config",
    "check_section_keys",
    "code_matches",
    "find_config_file",
    "load_config",
    "section_error",
    "selected_rules",
    "with_section_values",
]

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".rentcheck",
    "site-packages",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
)
OUTPUT_FORMATS = ("text", "concise", "json", "sarif", "github")
YAML_NAMES = ("rentcheck.yaml", ".rentcheck.yaml")
LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
# Tables owned by one gate each ([tool.rentcheck.audit], ...), from the gate table. The
# config layer only checks that they are tables; the gate validates its keys with
# ``check_section_keys``. A plugin gate's section is looked up only for a key that is not
# one of these (the entry points are not read on every run).
SECTIONS = _gate_sections(_GATES)
CORE_KEYS = (*LIST_KEYS, "per-file-ignores", "fail-level", "preview", "output-format")
# The host inventory ([tool.rentcheck.hosts.NAME] tables), validated by rentcheck.box.fleet.
INVENTORY = "hosts"
KNOWN_KEYS = (*CORE_KEYS, *SECTIONS, INVENTORY)
# Keys every gate section accepts: the gate's own selection and fail level (the one copy).
JUDGEMENT_KEYS = ("select", "ignore", "per-file-ignores", "fail-level")
ENV_PREFIX = "RENTCHECK_"


@record
class Config:
    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    fail_level: Severity = Severity.WARNING
    preview: bool = False
    output_format: str = "text"
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str | None = None  # the file the settings came from, if any
    # Where each key's value came from ("[tool.rentcheck] of FILE", "the command line", ...),
    # so an error about a value names the place to fix it.
    origins: Mapping[str, str] = field(default_factory=dict)
    root: str = "."  # paths in globs and reports are relative to this directory
    notices: tuple[str, ...] = ()  # warnings about the settings themselves, said once per run

    @property
    def excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def section(self, name: str) -> Mapping[str, Any]:
        """The raw ``[tool.rentcheck.<name>]`` table (empty when absent)."""
        return self.sections.get(name, {})

    def to_dict(self) -> dict[str, Any]:
        return {
            "select": list(self.select),
            "extend-select": list(self.extend_select),
            "ignore": list(self.ignore),
            "per-file-ignores": {k: list(v) for k, v in sorted(self.per_file_ignores.items())},
            "exclude": list(self.exclude),
            "extend-exclude": list(self.extend_exclude),
            "fail-level": self.fail_level.label,
            "preview": self.preview,
            "output-format": self.output_format,
            **{name: dict(table) for name, table in sorted(self.sections.items())},
        }

    def digest(self) -> str:
        """Stable identity of the settings that decide findings (not where they came from)."""
        import hashlib
        import json

        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()


def find_config_file(start: str, *, outside: Sequence[str] = ()) -> str | None:
    """The nearest config file at or above ``start``, skipping directories inside any of
    ``outside`` (data that came from a box: its settings are never ours to read)."""
    directory = os.path.abspath(start)
    if os.path.isfile(directory):
        directory = os.path.dirname(directory)
    fenced = [os.path.realpath(p) for p in outside]
    while any(_inside(os.path.realpath(directory), f) for f in fenced):
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    while True:
        for name in YAML_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate) and _pyproject_has_table(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _outside_of(directory: str, untrusted: Sequence[str]) -> str:
    """``directory``, or the folder holding the pulled data it is inside: rentcheck's own
    files (the ledger, the cache) never go into data that came from a box."""
    for fenced in untrusted:
        real = os.path.realpath(fenced)
        if _inside(os.path.realpath(directory), real):
            return os.path.dirname(real)
    return directory


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _shadowed_pyproject(path: str) -> str | None:
    """The pyproject.toml beside a YAML config whose [tool.rentcheck] it hides, if any."""
    if path.endswith(".toml"):
        return None
    candidate = os.path.join(os.path.dirname(path), "pyproject.toml")
    if os.path.isfile(candidate) and _pyproject_has_table(candidate):
        return candidate
    return None


def _pyproject_has_table(path: str) -> bool:
    # Cheap text test first: parsing every pyproject on the way up costs more than it finds.
    with open(path, "rb") as handle:
        if b"tool.rentcheck" not in handle.read():
            return False
    return "rentcheck" in _read_toml(path).get("tool", {})


def _read_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", hint="fix the TOML syntax") from exc


def _read_file(path: str) -> dict[str, Any]:
    if path.endswith(".toml"):
        table = _read_toml(path).get("tool", {}).get("rentcheck", {})
    else:
        import yaml

        try:
            with open(path, "rb") as handle:
                table = yaml.safe_load(handle) or {}
        except (OSError, yaml.YAMLError) as exc:
            msg = str(exc).replace("\n", " ")
            raise ConfigError(f"cannot read {path}: {msg}", hint="fix the YAML syntax") from exc
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: settings must be a mapping", hint="use `select: [RC1]` style")
    return table


def _where(source: str) -> str:
    return f"[tool.rentcheck] of {source}" if source.endswith(".toml") else source


def _string_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        from rentcheck.pathmatch import split_list  # `*.{sh,bash}` is one glob

        value = split_list(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{key!r} in {_where(source)} must be a list of strings", hint=f'e.g. {key} = ["RC1"]'
        )
    return tuple(v.strip() for v in value if v.strip())


def _apply(values: dict[str, Any], config: Config, source: str, *, layered: bool = False) -> Config:
    """Overlay ``values`` on ``config``. In a ``layered`` source (environment, command line)
    an ``extend-*`` key adds to what the file said instead of replacing it."""
    changes: dict[str, Any] = {}
    origins = dict(config.origins)
    for key, value in values.items():
        origins[key] = _where(source)
        if key not in KNOWN_KEYS and key not in _plugin_sections():
            import difflib

            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            hint = (
                f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(KNOWN_KEYS)
            )
            raise ConfigError(f"unknown key {key!r} in {_where(source)}", hint=hint)
        attr = key.replace("-", "_")
        if key in SECTIONS or key == INVENTORY or key in _plugin_sections():
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{key!r} in {_where(source)} must be a table",
                    hint=f"write it as [tool.rentcheck.{key}] (or `{key}:` mapping in YAML)",
                )
            changes["sections"] = {**config.sections, **changes.get("sections", {}), key: value}
        elif key in LIST_KEYS:
            items = _string_list(value, key, source)
            if layered and key.startswith("extend-"):
                items = tuple(getattr(config, attr)) + items
            changes[attr] = items
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(
                    f"'per-file-ignores' in {_where(source)} must map globs to code lists",
                    hint='e.g. "scripts/*.sh" = ["RC103"]',
                )
            changes[attr] = {str(g): _string_list(v, key, source) for g, v in value.items()}
        elif key == "fail-level":
            try:
                changes[attr] = Severity.parse(str(value))
            except ValueError as exc:
                raise ConfigError(f"'fail-level' in {_where(source)}: {exc}") from None
        elif key == "preview":
            changes[attr] = _boolean(value, key, source)
        elif key == "output-format":
            if value not in OUTPUT_FORMATS:
                raise ConfigError(
                    f"'output-format' in {_where(source)} is {value!r}",
                    hint="use one of: " + ", ".join(OUTPUT_FORMATS),
                )
            changes[attr] = value
    return replace(config, **changes, origins=origins)


def _plugin_sections() -> tuple[str, ...]:
    """Sections of gates that plugins add (read only when a key is not a built-in one)."""
    from rentcheck.gates.table import all_gates, gate_sections

    return gate_sections(all_gates())


def _boolean(value: Any, key: str, source: str) -> bool:
    # The environment can only say strings; a file must say a real boolean.
    if isinstance(value, str) and value.lower() in ("1", "true", "yes", "0", "false", "no"):
        return value.lower() in ("1", "true", "yes")
    if not isinstance(value, bool):
        raise ConfigError(f"{key!r} in {_where(source)} must be true or false")
    return value


def section_error(
    config: Config, section: str, key: str, problem: str, hint: str = ""
) -> ConfigError:
    """A ConfigError for a gate's own key, naming the key and the file like the core keys."""
    where = _where(config.source) if config.source else "the settings"
    return ConfigError(f"{section}.{key} in {where}: {problem}", hint=hint)


def with_section_values(
    config: Config, section: str, values: Mapping[str, Any], where: str
) -> Config:
    """``config`` with some keys of one gate's section replaced (the command line's
    ``--select`` of that gate, ...)."""
    if not values:
        return config
    table = {**config.section(section), **values}
    origins = {**config.origins, **{f"{section}.{k}": where for k in values}}
    return replace(config, sections={**config.sections, section: table}, origins=origins)


def check_section_keys(config: Config, section: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    """The section's table after refusing keys the gate does not know, without the
    judgement keys every section may carry (``select``, ``ignore``, ...: the judge reads
    those)."""
    table = config.section(section)
    known = (*allowed, *JUDGEMENT_KEYS) if section != "python" else tuple(allowed)
    for key in table:
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(known)
            raise section_error(config, section, key, "unknown key", hint)
    return {key: value for key, value in table.items() if key not in JUDGEMENT_KEYS}


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in CORE_KEYS:
        name = ENV_PREFIX + key.upper().replace("-", "_")
        if name in env and key != "per-file-ignores":
            values[key] = env[name]
    return values


def load_config(
    start: str = ".",
    *,
    explicit: str | None = None,
    isolated: bool = False,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    untrusted: Sequence[str] = (),
) -> Config:
    """Resolve the effective settings; raises ConfigError naming the key and the source.

    ``untrusted`` names directories whose content came from a box (a pulled folder): no
    config is read from inside them, found or named, and the project root is never one."""
    env = os.environ if env is None else env
    # Without a config file, paths are reported relative to where the user stands.
    config = Config(root=_outside_of(os.getcwd(), untrusted))
    explicit = explicit or env.get(ENV_PREFIX + "CONFIG") or None
    path = None if isolated else (explicit or find_config_file(start, outside=untrusted))
    if path is not None:
        if not os.path.isfile(path):
            raise ConfigError(
                f"config file {path} does not exist", hint="check --config / RENTCHECK_CONFIG"
            )
        where = os.path.realpath(path)
        for fenced in untrusted:
            if _inside(where, os.path.realpath(fenced)):
                raise ConfigError(
                    f"{path} is inside {fenced}, which came from the box: rentcheck never "
                    "takes settings from pulled data",
                    hint="keep the config in your project and pass that one with --config",
                )
        path = os.path.abspath(path)
        config = replace(config, source=path, root=os.path.dirname(path))
        config = _apply(_read_file(path), config, path)
        shadowed = _shadowed_pyproject(path)
        if shadowed is not None:
            notice = (
                f"{path} is used and the [tool.rentcheck] tables of {shadowed} are ignored "
                "(rentcheck.yaml wins in the same directory): keep your settings in one of them"
            )
            config = replace(config, notices=(*config.notices, notice))
    config = _apply(_from_env(env), config, "the RENTCHECK_* environment", layered=True)
    if overrides:
        given = {k: v for k, v in overrides.items() if v is not None}
        config = _apply(given, config, "the command line", layered=True)
    return config


def _normalise(token: str) -> str:
    selector = token.strip().upper()
    # `RC7xx` is how people write a family; it means the prefix `RC7`.
    stripped = selector.rstrip("X")
    if stripped != selector and (stripped[-1:].isdigit() or stripped == "RC"):
        return stripped
    return selector


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _check_tokens(
    tokens: Sequence[str],
    key: str,
    rules: Mapping[str, Rule],
    source: str,
    more_codes: Callable[[], Iterable[str]] | None = None,
) -> None:
    for raw in tokens:
        selector = _normalise(raw)
        if selector == "ALL" or any(code.startswith(selector) for code in rules):
            continue
        if more_codes is not None and any(c.startswith(selector) for c in more_codes()):
            # Another gate's rule (ignore = ["RC301"]): lint's selection is lint's only, so
            # it would do nothing here. Say where it works instead of ignoring it.
            from rentcheck.gates.table import section_of_code

            section = section_of_code(selector)
            raise ConfigError(
                f"{raw!r} in {key!r} of {source} is a rule of the {section} gate, not of lint",
                hint=f"the top-level select/ignore apply to lint only: put it under "
                f"[tool.rentcheck.{section}] {key.split('.', maxsplit=1)[0]}",
            )
        hint = suggest_code(selector, rules)
        raise ConfigError(f"unknown rule code {raw!r} in {key!r} of {source}", hint=hint)


def suggest_code(typed: str, rules: Mapping[str, Rule]) -> str:
    """'did you mean …?' for a mistyped code; letter-for-digit slips (O/0, l/1) first."""
    fixed = typed.upper().replace("O", "0").replace("L", "1").replace("I", "1")
    fixed = "RC" + fixed[2:] if fixed.startswith("RC") else fixed
    if fixed in rules:
        return f"did you mean {fixed}?"
    import difflib

    close = difflib.get_close_matches(typed.upper(), list(rules), n=1)
    return f"did you mean {close[0]}?" if close else "see `rentcheck rules` for the codes"


def selected_rules(
    config: Config,
    rules: Mapping[str, Rule],
    more_codes: Callable[[], Iterable[str]] | None = None,
) -> dict[str, Rule]:
    """The rules this run enables; raises ConfigError for a code no rule has (``more_codes``
    names codes that are valid though not in ``rules``, asked only for unknown tokens)."""
    for key, tokens in (
        ("select", config.select),
        ("extend-select", config.extend_select),
        ("ignore", config.ignore),
    ):
        source = config.origins.get(key, "the defaults")
        _check_tokens(tokens, key, rules, source, more_codes)
    for glob, tokens in config.per_file_ignores.items():
        source = config.origins.get("per-file-ignores", "the defaults")
        _check_tokens(tokens, f"per-file-ignores.{glob}", rules, source, more_codes)
    wanted = [_normalise(t) for t in (*config.select, *config.extend_select)]
    dropped = [_normalise(t) for t in config.ignore]
    chosen: dict[str, Rule] = {}
    for code, rule in rules.items():
        hits = [t for t in wanted if _matches(code, t)]
        if not hits or any(_matches(code, t) for t in dropped):
            continue
        # Preview rules need --preview, or their exact code selected (as in ruff).
        if rule.status is RuleStatus.PREVIEW and not config.preview and code not in hits:
            continue
        chosen[code] = rule
    return chosen


def code_matches(code: str, token: str) -> bool:
    """Whether ``token`` (a code, family prefix like ``RC1``/``RC1xx``, or ALL) covers ``code``."""
    return _matches(code, _normalise(token))

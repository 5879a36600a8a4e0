"""The gate table: one row per lifecycle gate, and every list of gates derived from it.

Adding a gate is one row (here, or a third-party ``Gate`` under the entry-point group
``rentcheck.gates``) plus its package: the row names the CLI commands and the module that
registers them, the config section, where the gate's rules live, its pytest module, the
evidence it records in the ledger and the gates it requires. ``tests/gates/test_table.py``
holds the derived lists to this table.
"""

from __future__ import annotations

from functools import cache, lru_cache

from rentcheck.record import record

__all__ = [
    "FILES_SEEN",
    "GATES",
    "GATE_ENTRY_POINT_GROUP",
    "PHASES",
    "Gate",
    "Proof",
    "Requirement",
    "all_gates",
    "command_index",
    "command_modules",
    "gate_named",
    "gate_sections",
    "gates_for",
]

GATE_ENTRY_POINT_GROUP = "rentcheck.gates"

# The lifecycle, in order. "maintenance" gates (profile staleness) guard no phase change.
PHASES: tuple[str, ...] = ("pre-rent", "audit", "launch", "watch", "pull", "teardown")
MAINTENANCE = "maintenance"


@record
class Requirement:
    """A gate that must have passed before this one, and what "the same" means for it.

    ``match`` names the evidence that must be equal: ``digest`` (the project's files),
    ``host`` (the box), ``manifest`` (the manifest on the box now). ``max_age_key`` names the
    key in the requiring gate's config section that holds the longest acceptable age
    (``"6h"``, ``"2d"``; ``default_age`` when absent). ``when_configured`` makes the
    requirement apply only when the required gate's own config section exists.
    """

    gate: str
    match: tuple[str, ...] = ("digest",)
    max_age_key: str | None = None
    default_age: str | None = None
    when_configured: bool = False


@record
class Proof:
    """What a gate must have seen to pass: at least ``minimum`` of ``counter`` in its result's
    ``seen`` (``"files"`` falls back to ``files_checked``). Seeing less is a failure (RC914)
    that says ``what`` was missing and ``how`` to provide it, whatever the findings say."""

    counter: str
    what: str  # in the gate's words, plural: "files linted", "optimizer steps"
    how: str  # the command or setting that provides it
    minimum: int = 1


# What a gate that declares nothing must have seen: a file (a plugin's gate that checks
# something else says so with its own ``proves``).
FILES_SEEN = Proof(
    "files",
    "files checked",
    "the gate checked nothing; give it something to check, or declare what it proves "
    "(Gate(proves=...)) and report it in GateResult.seen",
)


@record
class Gate:
    """One lifecycle gate: everything the CLI, the registry, the config, pytest and the
    ledger need to know about it."""

    name: str
    phase: str
    summary: str
    commands: tuple[str, ...] = ()  # CLI subcommands of this gate
    cli_module: str | None = None  # rentcheck.commands.<this> registers them; None: generic
    section: str | None = None  # its [tool.rentcheck.<section>] table (None: top level)
    section_keys: tuple[str, ...] = ()  # the keys its section accepts (besides judgement keys)
    rules: tuple[str, str] | None = None  # (module, attribute) of its tuple of Rule
    # "module:function" (config, options) -> GateResult, for a gate without a command
    # module of its own (a plugin's): `rentcheck <command>`, `rentcheck gate NAME` and the
    # pytest item run it.
    runner: str | None = None
    pytest_module: str | None = None  # its pytest plugin module (options, items, fixtures)
    evidence: tuple[str, ...] = ("digest",)  # what its ledger lines are keyed by
    requires: tuple[Requirement, ...] = ()
    planned: bool = False  # only its prerequisites are checked so far
    # "module:function" (config) -> its effective settings (a dataclass or a mapping), for
    # `rentcheck config` to show every value of the section, defaults included.
    settings: str | None = None
    # What it must have seen to pass (judge() adds RC914 when a run saw less). Every gate
    # proves something: "nothing seen" is never a pass.
    proves: tuple[Proof, ...] = (FILES_SEEN,)
    # Its pytest flag (``--rentcheck-<flag>``) besides ``--rentcheck-gate NAME``.
    pytest_flag: str | None = None

    @property
    def phase_index(self) -> int:
        return PHASES.index(self.phase) if self.phase in PHASES else len(PHASES)


_LAUNCH_AGE = Requirement("audit", ("host",), max_age_key="audit-max-age", default_age="24h")

# The built-in gates, in lifecycle order.
GATES: tuple[Gate, ...] = (
    Gate(
        name="lint",
        phase="pre-rent",
        summary="shell, Python and config hygiene of the repository",
        commands=("check",),
        cli_module="check",
        section=None,
        pytest_module="rentcheck.pytest_plugin",
        pytest_flag="rentcheck",
        proves=(
            Proof(
                "files",
                "files linted",
                "nothing in the project is a file the lint gate reads (shell, Python, config); "
                "check `exclude`/`extend-exclude` and `python.training-paths` in the config, or "
                "run `rentcheck check` from the project root",
            ),
        ),
    ),
    Gate(
        name="smoke",
        phase="pre-rent",
        summary="the real entrypoint runs N optimizer steps on CPU",
        commands=("smoke",),
        cli_module="run",
        section="smoke",
        rules=("rentcheck.run.rules", "SMOKE_RULES"),
        pytest_module="rentcheck.run.pytest_gate",
        pytest_flag="rentcheck_smoke",
        proves=(
            Proof(
                "optimizer_steps",
                "optimizer steps",
                "the run took no optimizer step that the step shim or the log showed; keep "
                "`smoke.shim` on (auto), or set `smoke.step-patterns` to a regex matching the "
                "step lines the entrypoint prints",
            ),
        ),
        settings="rentcheck.run.settings:smoke_settings",
    ),
    Gate(
        name="resume",
        phase="pre-rent",
        summary="killed at step k, the identical command continues exactly",
        commands=("resume",),
        cli_module="run",
        section="resume",
        rules=("rentcheck.run.rules", "RESUME_RULES"),
        pytest_module="rentcheck.run.pytest_gate",
        pytest_flag="rentcheck_resume",
        proves=(
            Proof(
                "scenarios",
                "kill-and-relaunch scenarios judged",
                "no scenario ran to a judgement; give the run enough `resume.steps` for a kill "
                "to land before its end, and keep `resume.signals` or `kill-during-save` on",
            ),
        ),
        settings="rentcheck.run.settings:resume_settings",
    ),
    Gate(
        name="audit",
        phase="audit",
        summary="the box: disks, inodes, budget, durable tier, memory, GPU, live scripts",
        commands=("audit", "trust", "push"),
        cli_module="box",
        section="audit",
        rules=("rentcheck.box.rules", "BOX_RULES"),
        pytest_module="rentcheck.box.pytest_gate",
        pytest_flag="rentcheck_audit",
        proves=(
            Proof(
                "hosts",
                "boxes probed",
                "the probe did not answer; check `rentcheck audit --host HOST` reaches the box",
            ),
        ),
        evidence=("host",),
        settings="rentcheck.box.settings:audit_settings",
    ),
    Gate(
        name="launch",
        phase="launch",
        summary="the detached job is alive and printed its first step",
        commands=("launch", "launch-check"),
        cli_module="launch",
        section="launch",
        rules=("rentcheck.box.launch_rules", "LAUNCH_RULES"),
        proves=(
            Proof(
                "jobs",
                "jobs proved alive",
                "no job was seen running; start it with `rentcheck launch --host HOST -- CMD`",
            ),
        ),
        runner="rentcheck.box.launch_gate:launch_check_runner",
        evidence=("digest", "host"),
        requires=(
            Requirement("lint"),
            Requirement("smoke"),
            Requirement("resume", when_configured=True),
            _LAUNCH_AGE,
        ),
        settings="rentcheck.box.launch_settings:launch_settings_view",
    ),
    Gate(
        name="watch",
        phase="watch",
        summary="alive, advancing, headroom, no new OOM kills",
        commands=("watch",),
        cli_module="watch",
        section="watch",
        rules=("rentcheck.box.launch_rules", "WATCH_RULES"),
        proves=(
            Proof(
                "jobs",
                "jobs probed",
                "the job was not probed; check `rentcheck watch --host HOST --session NAME` "
                "reaches the box and names the launched session",
            ),
        ),
        runner="rentcheck.box.watch_gate:watch_runner",
        evidence=("host",),
        requires=(Requirement("launch", ("host",)),),
        settings="rentcheck.box.launch_settings:watch_settings_view",
    ),
    Gate(
        name="pull",
        phase="pull",
        summary="an exact roster built on the box; its files brought home with resume",
        commands=("pull", "manifest"),
        cli_module="pull",
        section="pull",
        section_keys=("remote_root", "local_root"),  # the fleet's defaults (box/fleet_pull.py)
        rules=("rentcheck.pull.transfer_rules", "PULL_GATE_RULES"),
        pytest_module="rentcheck.pull.pytest_pull",
        pytest_flag="rentcheck_pull",
        evidence=("manifest",),
        proves=(
            Proof(
                "files",
                "files brought home and verified",
                "the roster listed no file; check the remote root names the run's folder",
            ),
        ),
    ),
    Gate(
        name="verify",
        phase="pull",
        summary="the local copy matches the manifest bit for bit; checkpoints safe and finite",
        commands=("verify",),
        cli_module="pull",
        section="verify",
        rules=("rentcheck.pull.transfer_rules", "PULL_GATE_RULES"),
        pytest_module="rentcheck.pull.pytest_gate",
        pytest_flag="rentcheck_verify",
        evidence=("manifest",),
        proves=(
            Proof(
                "files",
                "files verified against the manifest",
                "nothing was verified; pull the run with `rentcheck pull BOX:ROOT ./run` (it "
                "brings PULL_MANIFEST.json) and verify that folder",
            ),
        ),
        settings="rentcheck.pull.settings:verify_settings",
    ),
    Gate(
        name="teardown",
        phase="teardown",
        summary="nothing is released until the pull was verified against the box as it is now",
        commands=("teardown",),
        cli_module="pull",
        section="teardown",
        rules=("rentcheck.pull.teardown_rules", "TEARDOWN_RULES"),
        pytest_module="rentcheck.pull.pytest_pull",
        pytest_flag="rentcheck_teardown",
        evidence=("manifest",),
        proves=(
            Proof(
                "box_reads",
                "re-reads of the box as it is now",
                "the box was not re-read; pass --host HOST (it must answer), or --manifest-now "
                "FILE rebuilt on the box after the verified pull",
            ),
        ),
        requires=(Requirement("verify", ("manifest",)),),
        settings="rentcheck.pull.settings:teardown_settings",
    ),
    Gate(
        name="stale",
        phase=MAINTENANCE,
        summary="platform profiles: schema, sections, and facts not older than the limit",
        commands=("stale", "profiles"),
        cli_module="stale",
        section="profiles",
        rules=("rentcheck.profiles.rules", "RULES"),
        settings="rentcheck.profiles.load:profiles_settings",
        proves=(
            Proof(
                "files",
                "profiles checked",
                "this project lists no profiles of its own: set `profiles.paths` in its config, "
                "or name them (`rentcheck stale DIR_OR_FILE.md`)",
            ),
        ),
    ),
)

# Commands that are tools, not gates: (command, module under rentcheck.commands).
TOOL_COMMANDS: tuple[tuple[str, str], ...] = (
    ("rules", "rules"),
    ("rule", "rules"),
    ("config", "config_cmd"),
    ("gate", "gate"),
    ("status", "gate"),
    ("merge", "merge"),
    ("report", "report"),
    ("init", "init"),
)

# The one command module of a gate whose commands are not in its own module's name.
_MODULE_OF_COMMAND = {"profiles": "profiles"}


@lru_cache(maxsize=1)
def all_gates() -> tuple[Gate, ...]:
    """The built-in gates, then third-party gates from the ``rentcheck.gates`` entry points."""
    from rentcheck.errors import ConfigError
    from rentcheck.plugins import entry_points

    found = list(GATES)
    names = {gate.name for gate in found}
    for ep in entry_points(GATE_ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken third-party gate must name itself
            raise ConfigError(
                f"gate {ep.name!r} ({ep.value}) failed to load: {exc}",
                hint=f"fix or uninstall the package that provides it (`python -c 'import "
                f"{ep.module}'` must work)",
            ) from exc
        rows = list(loaded) if isinstance(loaded, (list, tuple)) else [loaded]
        for row in rows:
            if not isinstance(row, Gate):
                raise ConfigError(
                    f"entry point {ep.name!r} of {GATE_ENTRY_POINT_GROUP} gave "
                    f"{type(row).__name__}, not a rentcheck Gate row",
                    hint="the entry point loads to a rentcheck.gates.table.Gate",
                )
            if row.name in names:
                raise ConfigError(
                    f"gate {row.name!r} is defined twice", hint="a plugin gate needs its own name"
                )
            names.add(row.name)
            found.append(row)
    return tuple(found)


def gate_named(name: str) -> Gate:
    """The gate called ``name``; a UsageError naming the known gates otherwise."""
    for gate in all_gates():
        if gate.name == name:
            return gate
    from rentcheck.errors import UsageError

    raise UsageError(f"unknown gate {name!r}", hint="known gates: " + known_names())


def known_names() -> str:
    return ", ".join(g.name for g in all_gates()) + " (or a phase: " + ", ".join(PHASES) + ")"


def gates_for(name: str) -> tuple[Gate, ...]:
    """A gate by name, or every gate of a lifecycle phase (``pre-rent``: lint, smoke, resume)."""
    in_phase = tuple(g for g in all_gates() if g.phase == name)
    return in_phase or (gate_named(name),)


def command_index(gates: tuple[Gate, ...] = GATES) -> dict[str, str]:
    """Which ``rentcheck.commands`` module registers each subcommand (one import per run).
    A gate without a module of its own gets the generic one (``gate``)."""
    index: dict[str, str] = {}
    for gate in gates:
        for command in gate.commands:
            index[command] = _MODULE_OF_COMMAND.get(command, gate.cli_module or "gate")
    index.update(TOOL_COMMANDS)
    return index


def command_modules(gates: tuple[Gate, ...] = GATES) -> tuple[str, ...]:
    """Every command module, each once, in the order of ``rentcheck --help``."""
    return tuple(dict.fromkeys(command_index(gates).values()))


def gate_sections(gates: tuple[Gate, ...] | None = None) -> tuple[str, ...]:
    """The config tables owned by gates, plus ``python`` (the lint gate's training paths)."""
    rows = all_gates() if gates is None else gates
    return tuple(dict.fromkeys(["python", *(g.section for g in rows if g.section)]))


def section_of_code(code: str) -> str:
    """The config section of the gate whose rules include ``code`` (a code or prefix)."""
    for gate in all_gates():
        if any(rule_code.startswith(code) for rule_code in gate_rule_codes(gate.name)):
            return gate.section or gate.name
    return "GATE"  # not reached: the caller saw the code among the gates' rules


@cache
def gate_rule_codes(name: str) -> frozenset[str]:
    """The codes of one gate's own rules (empty for a gate without rules)."""
    import importlib

    gate = gate_named(name)
    if gate.rules is None:
        return frozenset()
    module, attribute = gate.rules
    return frozenset(rule.code for rule in getattr(importlib.import_module(module), attribute))

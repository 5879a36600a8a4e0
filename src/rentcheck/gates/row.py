"""What a gate row is: the ``Gate`` record, what it requires of earlier gates
(``Requirement``) and what it must have seen to pass (``Proof``), and the lifecycle phases."""

from __future__ import annotations

from rentcheck.record import record

__all__ = ["FILES_SEEN", "MAINTENANCE", "PHASES", "Gate", "Proof", "Requirement"]

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

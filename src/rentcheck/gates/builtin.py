"""The built-in gates, one row each, in lifecycle order (the classes and every list derived
from these rows are in ``table.py``). A new built-in gate is one row here plus its package:
its runner ``run(config, options) -> GateResult``, its rules and its settings."""

from __future__ import annotations

from rentcheck.gates.row import MAINTENANCE, Gate, Proof, Requirement

__all__ = ["GATES"]

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
                "`smoke.shim` on (auto), or set `smoke.step-regex` to a regex matching the "
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
        cli_module="verify",
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
        cli_module="teardown",
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
            Proof(
                "jobs_accounted",
                "proofs that every job the ledger launched there has ended",
                "a job rentcheck launched on this box was not proved ended; run teardown with "
                "--host HOST so the box is asked (pid, start time, process group)",
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

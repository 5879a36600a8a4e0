"""``rentcheck smoke`` and ``rentcheck resume``: run the real entrypoint on CPU and judge it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rentcheck.config import Config, load_config
from rentcheck.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.gates.judge import GateResult

EPILOG = (
    "Give the command after `--` to override the configured one, e.g. "
    "`rentcheck smoke -- python train.py --steps 2`. Exit 0 pass, 1 findings, 2 error."
)


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    smoke = sub.add_parser(
        "smoke",
        parents=[common],
        help="run the training entrypoint on CPU for a few optimizer steps",
        description="Run the real entrypoint on CPU with trackers off for N optimizer steps "
        "and classify any failure ([tool.rentcheck.smoke]).",
        epilog=EPILOG,
    )
    _shared(smoke)
    smoke.add_argument("--steps", type=int, help="optimizer steps to run (default 2)")
    smoke.add_argument(
        "--allow",
        metavar="CLASSES",
        help="comma-separated failure classes to waive (needs-gpu,...)",
    )
    smoke.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    smoke.set_defaults(handler=run_smoke_command)

    resume = sub.add_parser(
        "resume",
        parents=[common],
        help="kill the run at step k and mid-save; check that the same command continues exactly",
        description="Reference run, runs killed between checkpoints (SIGKILL, SIGTERM) and "
        "during a checkpoint write, identical relaunches; compares steps, losses and final "
        "weights ([tool.rentcheck.resume]).",
        epilog=EPILOG,
    )
    _shared(resume)
    resume.add_argument("--steps", type=int, help="value of {steps} in the args (default 12)")
    resume.add_argument("--checkpoint-dir", help="where the run saves, relative to its working dir")
    resume.add_argument("--signals", metavar="SIGS", help="comma-separated, e.g. SIGKILL,SIGTERM")
    resume.add_argument(
        "--no-kill-during-save",
        dest="kill_during_save",
        action="store_false",
        default=None,
        help="skip the kill-during-checkpoint-write scenario",
    )
    resume.set_defaults(handler=run_resume_command)


def _shared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset", help="a flag template for the entrypoint (`rentcheck smoke --list-presets`)"
    )
    parser.add_argument("--timeout", type=float, help="seconds per run (default 300)")
    parser.add_argument("--shim", choices=["auto", "on", "off"], help="in-process step shim")
    parser.add_argument(
        "--keep-workdir",
        action="store_true",
        default=None,
        help="keep the temp working dirs even when the gate passes",
    )
    parser.add_argument("cmd", nargs="*", metavar="-- COMMAND", help="the command to run")


def _overrides(args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "preset": args.preset,
        "timeout": args.timeout,
        "shim": args.shim,
        "steps": args.steps,
        **extra,
    }
    if args.cmd:
        # A command given here replaces the configured command and its args.
        overrides.update(command=list(args.cmd), args=[])
    return overrides


def _config(args: argparse.Namespace) -> Config:
    return load_config(
        ".",
        explicit=args.config,
        isolated=args.isolated,
        overrides={"fail-level": args.fail_level, "output-format": args.output_format},
    )


def _finish(args: argparse.Namespace, config: Config, result: GateResult) -> int:
    from rentcheck.commands.finish import finish
    from rentcheck.gates.run import GateRun
    from rentcheck.registry import all_rules

    run = GateRun(config, result.gate)
    return finish(args, run, result, command=result.gate, rules=all_rules())


def _list_presets() -> int:
    from rentcheck.run.presets import PRESETS

    for preset in PRESETS.values():
        sys.stdout.write(f"{preset.name}: {preset.description}\n")
        sys.stdout.write(f"  smoke args:  {' '.join(preset.smoke_args) or '(none)'}\n")
        sys.stdout.write(f"  resume args: {' '.join(preset.resume_args) or '(none)'}\n")
        sys.stdout.write(f"  resume mode: {preset.resume_mode}\n")
        if preset.note:
            sys.stdout.write(f"  note: {preset.note}\n")
    return 0


def run_smoke_command(args: argparse.Namespace) -> int:
    if args.list_presets:
        return _list_presets()
    from rentcheck.run.gate_results import smoke_result
    from rentcheck.run.settings import smoke_settings
    from rentcheck.run.smoke import run_smoke

    allow = args.allow.split(",") if args.allow else None
    config = _config(args)
    settings = smoke_settings(config, _overrides(args, {"allow": allow}))
    outcome = run_smoke(settings, keep_workdir=args.keep_workdir)
    return _finish(args, config, smoke_result(outcome))


def run_resume_command(args: argparse.Namespace) -> int:
    from rentcheck.run.gate_results import resume_result
    from rentcheck.run.resume import run_resume
    from rentcheck.run.settings import resume_settings

    if args.steps is not None and args.steps < 1:
        raise UsageError("--steps must be >= 1")
    # `--signals ""` means none: only the kill-during-save scenario.
    signals = None if args.signals is None else [s for s in args.signals.split(",") if s.strip()]
    extra = {
        "checkpoint-dir": args.checkpoint_dir,
        "signals": signals,
        "kill-during-save": args.kill_during_save,
    }
    config = _config(args)
    settings = resume_settings(config, _overrides(args, extra))
    outcome = run_resume(settings, keep_workdirs=args.keep_workdir)
    return _finish(args, config, resume_result(outcome))

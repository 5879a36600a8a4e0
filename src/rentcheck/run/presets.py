"""Starting points for the smoke and resume ``args`` of common training entrypoints.

A preset's args come first, the project's own ``args`` after them (so a tiny-model override can
be added, or a preset value overridden where the entrypoint lets the last flag win). They are
templates: ``{steps}`` and ``{checkpoint_every}`` are filled in by rentcheck. Check them against
your entrypoint; frameworks rename flags between versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["PRESETS", "Preset", "builds_its_own_training_args", "training_args_limits"]


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    smoke_args: tuple[str, ...]
    resume_args: tuple[str, ...]
    checkpoint_dir: str | None = None  # where the resume args make it save, if they decide it
    env: Mapping[str, str] = field(default_factory=dict)
    note: str = ""
    # Lightning and HF resume mid-epoch with another batch order by design: not bit-equal.
    resume_mode: str = "exact"
    # The limits go in through the step shim (TrainingArguments fields set in the process),
    # not as flags: for scripts that build TrainingArguments from their own argparse.
    in_process: bool = False


def training_args_limits(section: str, steps: int) -> dict[str, object]:
    """The TrainingArguments fields the shim sets in the run (what the hf-trainer preset's
    flags would say), for a script whose own argparse would reject those flags."""
    every = 1 if section == "smoke" else max(1, steps // 3)
    return {
        "max_steps": steps,
        "logging_steps": 1,
        "logging_nan_inf_filter": False,
        "save_strategy": "steps",
        "save_steps": every,
        "dataloader_num_workers": 0,
    }


def builds_its_own_training_args(text: str) -> bool:
    """A transformers script that makes TrainingArguments from its own flags (argparse, a
    config file), not from the command line through HfArgumentParser."""
    return "TrainingArguments(" in text and "HfArgumentParser(" not in text


# The Trainer flags smoke and resume share: a loss line per step, checkpoints by step (NaN/Inf
# losses are otherwise filtered out of the logs). CPU and no reporters come from the env block
# (ACCELERATE_USE_CPU, WANDB_*, DISABLE_MLFLOW_INTEGRATION; transformers 5 reports to none).
_HF_TRAINER_ARGS = (
    "--max_steps",
    "{steps}",
    "--logging_steps",
    "1",
    "--logging_nan_inf_filter",
    "false",
    "--save_strategy",
    "steps",
)
_HF_TRAINER_DATA = ("--dataloader_num_workers", "0", "--output_dir", "out")


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "plain",
            "a script with its own flags: no args added, the shim stops it after `steps` steps",
            smoke_args=(),
            resume_args=(),
        ),
        Preset(
            "lightning-cli",
            "LightningCLI `fit` (put `fit --config ...` in command)",
            smoke_args=(
                "--trainer.max_steps={steps}",
                "--trainer.limit_train_batches={steps}",
                "--trainer.limit_val_batches=1",
                "--trainer.num_sanity_val_steps=0",
                "--trainer.accelerator=cpu",
                "--trainer.devices=1",
                "--trainer.logger=false",
                # Without a logger SaveConfigCallback writes config.yaml into default_root_dir
                # (the cwd) and aborts when the project has one there: a dir of its own.
                "--trainer.default_root_dir=rentcheck-smoke",
            ),
            resume_args=(
                "--seed_everything=42",
                "--trainer.deterministic=true",
                "--trainer.max_steps={steps}",
                "--trainer.accelerator=cpu",
                "--trainer.devices=1",
                # A local CSV logger, not `false`: without a logger SaveConfigCallback writes
                # config.yaml into the run dir and every relaunch aborts on it; a logger gives
                # each launch its own version_N dir.
                "--trainer.logger=CSVLogger",
                "--trainer.logger.save_dir=logs",
                "--trainer.callbacks+=ModelCheckpoint",
                "--trainer.callbacks.dirpath=checkpoints",
                "--trainer.callbacks.every_n_train_steps={checkpoint_every}",
                "--trainer.callbacks.save_top_k=-1",
                "--trainer.callbacks.save_last=true",
                # Part of the identical command on every launch: load `last` when it exists.
                "--ckpt_path=last",
            ),
            checkpoint_dir="checkpoints",
            note="fast_dev_run is avoided on purpose: it disables checkpointing and loggers",
            resume_mode="continues",
        ),
        Preset(
            "lightning-hydra",
            "lightning-hydra-template style `python src/train.py` with Hydra overrides",
            smoke_args=(
                "++trainer.max_steps={steps}",
                "++trainer.limit_train_batches={steps}",
                "++trainer.limit_val_batches=1",
                "++trainer.num_sanity_val_steps=0",
                "trainer.accelerator=cpu",
                "trainer.devices=1",
                "logger=null",
                "++data.num_workers=0",
                "++data.pin_memory=false",
                # The template roots outputs at the project; keep them in the sandbox.
                "++paths.log_dir=./logs",
            ),
            resume_args=(
                "seed=42",
                "++trainer.deterministic=true",
                "++trainer.max_steps={steps}",
                "trainer.accelerator=cpu",
                "trainer.devices=1",
                "logger=null",
                "++data.num_workers=0",
                "++paths.log_dir=./logs",
                # A timestamped run dir would give every relaunch a fresh checkpoint dir.
                "hydra.run.dir=./run",
                "++callbacks.model_checkpoint.every_n_train_steps={checkpoint_every}",
                "++callbacks.model_checkpoint.save_last=true",
                "++ckpt_path=./run/checkpoints/last.ckpt",
            ),
            checkpoint_dir="run/checkpoints",
            resume_mode="continues",
        ),
        Preset(
            "hf-trainer",
            "transformers Trainer scripts (run_clm.py style TrainingArguments flags)",
            smoke_args=(*_HF_TRAINER_ARGS, "--save_steps", "1", *_HF_TRAINER_DATA),
            resume_args=(
                *_HF_TRAINER_ARGS,
                "--save_steps",
                "{checkpoint_every}",
                "--seed",
                "42",
                "--full_determinism",
                *_HF_TRAINER_DATA,
            ),
            checkpoint_dir="out",
            note="the example scripts resume from get_last_checkpoint(output_dir) on their own",
            resume_mode="continues",
        ),
        Preset(
            "hf-trainer-argparse",
            "transformers Trainer scripts with their own argparse flags: no flags added, the "
            "step shim sets max_steps, save_steps and logging in TrainingArguments",
            smoke_args=(),
            resume_args=(),
            note="the command stays as typed; the shim sets TrainingArguments' max_steps, "
            "save_strategy/save_steps and logging_steps in the process (`hf-trainer` on such a "
            "script switches to this preset)",
            resume_mode="continues",
            in_process=True,
        ),
        Preset(
            "torchtitan",
            "torchtitan train.py with a *_debugmodel config",
            smoke_args=(
                "--training.steps",
                "{steps}",
                "--metrics.log_freq",
                "1",
                "--checkpoint.interval",
                "1",
            ),
            resume_args=(
                "--training.steps",
                "{steps}",
                "--metrics.log_freq",
                "1",
                "--checkpoint.enable",
                "--checkpoint.interval",
                "{checkpoint_every}",
                "--checkpoint.folder",
                "checkpoint",
                "--debug.seed",
                "42",
                "--debug.deterministic",
            ),
            checkpoint_dir="outputs/checkpoint",
            note="pin lr_scheduler total steps so the schedule does not depend on --training.steps",
        ),
        Preset(
            "torchtune",
            "`tune run <recipe> --config <cfg>` key=value overrides",
            smoke_args=(
                "max_steps_per_epoch={steps}",
                "epochs=1",
                "device=cpu",
                "dtype=fp32",
                "compile=False",
                "log_every_n_steps=1",
                "output_dir=./out",
            ),
            resume_args=(
                "max_steps_per_epoch={steps}",
                "epochs=1",
                "device=cpu",
                "dtype=fp32",
                "seed=42",
                "log_every_n_steps=1",
                "output_dir=./out",
            ),
            checkpoint_dir="out",
            note="torchtune resumes at epoch boundaries only",
        ),
        Preset(
            "composer",
            "Composer / llm-foundry YAML entrypoints with key=value overrides",
            smoke_args=(
                "max_duration={steps}ba",
                "train_subset_num_batches={steps}",
                "device=cpu",
                "loggers={}",
                "console_log_interval=1ba",
                "save_interval=1ba",
                "save_folder=./ckpt",
            ),
            resume_args=(
                "max_duration={steps}ba",
                "device=cpu",
                "seed=42",
                "console_log_interval=1ba",
                "save_interval={checkpoint_every}ba",
                "save_folder=./ckpt",
                "run_name=rentcheck-resume",
                "autoresume=true",
            ),
            checkpoint_dir="ckpt",
        ),
    )
}

"""RC6xx: what the smoke and resume gates find (one rule per failure class)."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = ["RESUME_RULES", "RUN_RULES", "SHIM_UNAVAILABLE", "SMOKE_CLASSES", "SMOKE_RULES"]

_NONE = Applicability.NONE
_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE


_PAID = "On a rented GPU this failure costs the boot, the setup and the download before it shows. "

# Failure class (the word used in `allow`, reports and JSON) -> rule.
SMOKE_CLASSES: dict[str, Rule] = {
    "import": Rule(
        code="RC601",
        name="smoke-import-error",
        summary="The entrypoint fails to import a module",
        why=_PAID
        + "A missing dependency, a wrong extra or a module that moved is the cheapest bug "
        "there is to find locally: the process dies before the first step.",
        example_bad="import tinytrain_extras  # not installed, not in the repo",
        example_good="pip install the package (and pin it), or import it from where it lives",
        fix=(
            "Install the missing package in the environment the box will use (and list it in "
            "the project's dependencies), or fix the import path."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "config": Rule(
        code="RC602",
        name="smoke-config-error",
        summary="The entrypoint rejects its config or arguments",
        why=_PAID + "A missing key, a renamed option, a path that only exists on your laptop: the "
        "run stops during start-up, after the instance is already billing.",
        example_bad='config.json without "keep_last"; argparse: unrecognized arguments',
        example_good="a config validated at start-up, and the same config committed with the code",
        fix=(
            "Add the missing key or fix the argument; check the smoke `args` and `command` too "
            "(they run in a copy of the project: name untracked data dirs in `link`)."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "data": Rule(
        code="RC603",
        name="smoke-data-error",
        summary="The data pipeline fails (dataset, sampler, collate)",
        why=_PAID + "Dataset and collate bugs surface at the first batch; a CPU run with a tiny "
        "dataset finds them in seconds, a GPU box finds them after the download.",
        example_bad="TensorDataset(features, labels[:-1])  # size mismatch",
        example_good="datasets whose pieces are checked to have equal length",
        fix=(
            "Fix the dataset/collate code named in the traceback; run with num_workers=0 to get "
            "a direct traceback."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "shape-dtype": Rule(
        code="RC604",
        name="smoke-shape-or-dtype-error",
        summary="A tensor shape or dtype mismatch in the model",
        why=_PAID + "Shape and dtype bugs are independent of the device: the same mismatch that "
        "kills the run on a GPU kills it on the CPU, in the first forward pass.",
        example_bad=(
            "nn.Linear(num_features + 1, hidden)  # mat1 and mat2 shapes cannot be multiplied"
        ),
        example_good="nn.Linear(num_features, hidden)",
        fix="Fix the layer sizes or dtypes named in the traceback.",
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "hard-coded-cuda": Rule(
        code="RC605",
        name="smoke-hard-coded-cuda",
        summary="The code calls CUDA unconditionally",
        why=(
            "`.cuda()` or `device='cuda'` without a fallback fails anywhere without a GPU: the "
            "CPU smoke, a CPU eval box, a CI runner. A device variable makes the same code run "
            "both."
        ),
        example_bad="model = build_model(cfg).cuda()",
        example_good="model = build_model(cfg).to(device)  # device from a flag, cpu when no GPU",
        fix="Use a device variable (`torch.device(args.device)`) everywhere instead of .cuda().",
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "needs-gpu": Rule(
        code="RC606",
        name="smoke-needs-gpu-dependency",
        summary="A dependency only works with an NVIDIA GPU",
        why=(
            "flash-attn, bitsandbytes, apex, Triton kernels and friends fail to import or run "
            "on a CPU. If the code has no CPU path, the smoke cannot run; that is a decision to "
            "make explicitly (allow it), not a surprise."
        ),
        example_bad="from flash_attn import flash_attn_func  # at module top, no fallback",
        example_good="try: from flash_attn import ...; except ImportError: use torch SDPA",
        fix=(
            "Import the GPU-only package lazily with a CPU fallback, or waive the class with "
            '`allow = ["needs-gpu"]` in [tool.rentcheck.smoke].'
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "non-finite": Rule(
        code="RC607",
        name="smoke-non-finite",
        summary="Loss or parameters become NaN/Inf in the first steps",
        why=_PAID + "A NaN from step one (bad init, log(0), an lr typo, division by a zero "
        "temperature) wastes the whole run; it is visible after two steps on a CPU.",
        example_bad="logits = model(x) / 0.0",
        example_good="logits = model(x) / max(temperature, 1e-6)",
        fix=(
            "Find the first non-finite value (torch.autograd.set_detect_anomaly(True)); check "
            "lr, init and divisions. HF Trainer: pass --logging_nan_inf_filter false to see "
            "them."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "hang": Rule(
        code="RC608",
        name="smoke-hang",
        summary="The run did not reach N steps before the timeout and was not seen stepping",
        why=(
            "A deadlocked DataLoader, a rendezvous waiting for peers or an interactive login "
            "prompt hangs a rented box until someone notices, billing all along."
        ),
        example_bad="socket.create_server(...).accept()  # waits for a peer that never comes",
        example_good="timeouts on every wait; trackers disabled or offline in smoke runs",
        fix=(
            "Look at the last log lines to see where it waits. A run the step shim saw still "
            "stepping at the limit is reported as too slow (RC615), not as this."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "checkpoint-save": Rule(
        code="RC609",
        name="smoke-checkpoint-save-broken",
        summary="Saving a checkpoint fails",
        why=(
            "A save that fails (unpicklable object, missing directory, no permission) loses "
            "every step since the last one; found at the first save of the real run, it is "
            "hours lost."
        ),
        example_bad="torch.save({'model': sd, 'collate': lambda x: x}, path)",
        example_good="torch.save({'model': sd, 'optimizer': opt.state_dict()}, path)",
        fix=(
            "Fix what the save error names; make the smoke args save within the first steps "
            "(e.g. --ckpt-every 1)."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "outside-sandbox": Rule(
        code="RC610",
        name="smoke-wrote-outside-sandbox",
        summary="The run wrote into the project directory",
        why=(
            "The smoke runs in a fresh temp dir. A run that writes next to its code instead of "
            "the working directory will fill the code disk on the box and mix outputs of runs."
        ),
        example_bad="ckpt_dir = Path(__file__).parent / 'checkpoints'",
        example_good=(
            "ckpt_dir = Path(args.ckpt_dir)  # relative to the working directory or an output root"
        ),
        fix="Write outputs relative to the working directory or a configured output path.",
        family="smoke",
        default_severity=_W,
        fix_applicability=_NONE,
    ),
    "needs-network": Rule(
        code="RC611",
        name="smoke-needs-network",
        summary="The run needs network access or an uncached download",
        why=(
            "A tiny smoke config should not download anything; with HF offline variables set, a "
            "download fails fast instead of hanging, and shows which asset the box will fetch."
        ),
        example_bad="AutoModel.from_pretrained('big-model')  # in the smoke config",
        example_good="a tiny config, or the asset pre-cached",
        fix="Use a tiny model in the smoke args, pre-cache the asset, or set `offline = false`.",
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "crash": Rule(
        code="RC612",
        name="smoke-crashed",
        summary="The run exited with an error of no more specific class",
        why=_PAID + "Any crash in the first steps is a crash on the box.",
        example_bad="exit status 1 with a RuntimeError",
        example_good="exit status 0",
        fix="Read the last log lines and the reproduce command in the report.",
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "no-steps": Rule(
        code="RC613",
        name="smoke-no-optimizer-step",
        summary="The run exited 0 without an optimizer step rentcheck could see",
        why=(
            "A run that ends cleanly without training (an empty dataset, max_steps=0, a wrong "
            "subcommand) passes every exit-code check and trains nothing; a run whose steps "
            "nobody counted had no NaN check either."
        ),
        example_bad="python train.py --steps 0",
        example_good="python train.py --steps 2",
        fix=(
            "Check that the smoke args make the run take steps. The step shim counts any "
            "torch.optim step and parameters updated in place between two backward passes; "
            "with `shim: off` (or a launcher that drops it), print one line per step and set "
            "`step-regex` to match it."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
    "too-slow": Rule(
        code="RC615",
        name="smoke-too-slow-for-timeout",
        summary="The run was still taking steps when its time limit ran out",
        why=(
            "A run that trains, only slower than the time limit allows, is not hung: the fix "
            "is fewer steps or more time, not a search for what it waits on. Told apart from "
            "a hang (RC608) by the step shim: its last step came a few step-times before the "
            "limit."
        ),
        example_bad="steps: 200 at 2 s per step on CPU with timeout: 300",
        example_good="steps: 20 (or timeout: 600)",
        fix=(
            "Lower `steps` (or the step count in the `args`), train a smaller model in the "
            "gate's args, or raise `timeout` in the gate's section; the message gives the "
            "measured seconds per step."
        ),
        family="smoke",
        default_severity=_E,
        fix_applicability=_NONE,
    ),
}

SHIM_UNAVAILABLE = Rule(
    code="RC614",
    name="step-shim-unavailable",
    summary="rentcheck's step shim could not see the run",
    why=(
        "Without the shim, the gate judges by exit code and log lines only: it cannot count "
        "optimizer steps, stop after N, catch NaN parameters, or kill at an exact step. It "
        "happens with `python -I`/`-S`/`-E` or a launcher that replaces PYTHONPATH or "
        "sitecustomize."
    ),
    example_bad="exec python -I train.py",
    example_good="exec python train.py",
    fix="Drop -I/-S/-E and keep PYTHONPATH when launching, or set `shim = off` to accept it.",
    family="smoke",
    default_severity=_N,
    fix_applicability=_NONE,
)

SMOKE_RULES: tuple[Rule, ...] = (*SMOKE_CLASSES.values(), SHIM_UNAVAILABLE)

_KILL = "A rented box is preempted or killed without warning; the identical command must go on. "

STEP_RESET = Rule(
    code="RC620",
    name="resume-step-reset",
    summary="The relaunch started again from step 1",
    why=_KILL + "A deterministic trainer that ignores its checkpoint reproduces the reference "
    "exactly, losses and weights included; only the step numbers show it retrained all.",
    example_bad="model = build(); train(from_step=1)  # checkpoint never loaded",
    example_good="load the newest valid checkpoint on every start, unconditionally",
    fix="Load the newest checkpoint on start-up without a --resume flag.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
WRONG_START = Rule(
    code="RC621",
    name="resume-wrong-start-step",
    summary="The relaunch did not continue after the last checkpoint",
    why=_KILL + "Continuing from an older checkpoint repeats paid work; continuing past the newest "
    "skips steps that were never trained.",
    example_bad="resume from checkpoints[0]",
    example_good="resume from the newest checkpoint that loads",
    fix="Pick the newest complete checkpoint and continue at its step + 1.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
RNG_OR_DATA = Rule(
    code="RC622",
    name="resume-rng-or-data-position-not-restored",
    summary="The first resumed step differs from the uninterrupted run",
    why=(
        "The first step after a resume sees a different batch or dropout mask when the data "
        "position or the RNG state is not in the checkpoint, so the run silently trains on a "
        "different stream than it would have."
    ),
    example_bad="checkpoint = {'model': ..., 'optimizer': ...}  # no RNG, no data position",
    example_good=(
        "checkpoint += {'rng': torch.get_rng_state(), 'position': (epoch, index, sampler_state)}"
    ),
    fix=(
        "Save and restore the torch/Python/NumPy RNG states and the data position (epoch, "
        "samples consumed, shuffle state)."
    ),
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
OPTIMIZER = Rule(
    code="RC623",
    name="resume-optimizer-or-scheduler-not-restored",
    summary="Losses diverge one step or more after the resume",
    why=(
        "The first resumed loss is computed with restored weights, so it still matches; the "
        "update after it uses optimizer moments and the learning rate, which diverge when the "
        "optimizer or scheduler state is not restored."
    ),
    example_bad="model.load_state_dict(ckpt['model'])  # optimizer and scheduler start fresh",
    example_good=(
        "optimizer.load_state_dict(ckpt['optimizer']); scheduler.load_state_dict(ckpt['scheduler'])"
    ),
    fix="Save and restore the optimizer and LR scheduler state (and grad scaler, EMA).",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
FINAL_DIFFERS = Rule(
    code="RC624",
    name="resume-final-state-differs",
    summary="The resumed run ended at another step or weights",
    why=_KILL + "The product of a run is its final weights: if they differ from an uninterrupted "
    "run, every resume changes the result.",
    example_bad="final weights sha256 differs from the reference",
    example_good="bit-identical final weights on CPU",
    fix="Check optimizer/scheduler state and the final save; see the first mismatching step.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
LEFTOVER_TEMP = Rule(
    code="RC625",
    name="resume-leftover-temp-files",
    summary="Temp files are left in the checkpoint directory",
    why=(
        "Temp files from interrupted saves that nobody removes pile up with every preemption "
        "until the disk or the inode quota is full, in the middle of a save."
    ),
    example_bad="ckpt.pt.tmp left after each kill",
    example_good="remove stale temp files on start-up (only those whose writer is gone)",
    fix="On start-up, delete temp files of checkpoint writers that are no longer running.",
    family="resume",
    default_severity=_W,
    fix_applicability=_NONE,
)
NON_ATOMIC = Rule(
    code="RC626",
    name="resume-non-atomic-checkpoint",
    summary="The relaunch crashed on a checkpoint cut mid-save",
    why=(
        "A checkpoint written straight onto its final name is truncated by a kill mid-save; the "
        "relaunch then loads the truncated file and crashes, and the run stays down while the "
        "box bills. Temp file + fsync + rename leaves either the old or the new checkpoint, "
        "never half of one."
    ),
    example_bad="torch.save(state, 'ckpt-000008.pt')",
    example_good="torch.save(state, tmp); fsync; os.replace(tmp, final); fsync(dir)",
    fix=(
        "Write to a temp name in the same directory, fsync, os.replace onto the final name, "
        "fsync the directory; on load, fall back to the previous checkpoint if the newest fails."
    ),
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
PARTIAL_TOLERATED = Rule(
    code="RC633",
    name="resume-partial-checkpoint-tolerated",
    summary="A checkpoint was visible under its final name before it was complete",
    why=(
        "A kill during the save left a truncated file under a checkpoint's final name; this "
        "relaunch coped (it skipped it or fell back), but any other reader (a pull, an eval "
        "job, a loader without that fallback) takes it for a checkpoint. Often the framework "
        "decides how it writes, so this is a note."
    ),
    example_bad="torch.save(state, 'checkpoint-8/optimizer.pt')  # loader skips incomplete dirs",
    example_good="write checkpoint-8 as tmp-checkpoint-8, then os.replace it onto checkpoint-8",
    fix=(
        "Write under a temp name and rename when complete, or keep the loader's fallback and "
        "make sure nothing else reads the newest checkpoint before it is complete."
    ),
    family="resume",
    default_severity=_N,
    fix_applicability=_NONE,
)
RELAUNCH_FAILED = Rule(
    code="RC627",
    name="resume-relaunch-failed",
    summary="The relaunch after a kill failed",
    why=_KILL + "A relaunch that crashes needs a person to fix it, while the box keeps billing.",
    example_bad="relaunch exits 1: KeyError: 'optimizer'",
    example_good="relaunch continues and exits 0",
    fix="Read the relaunch's log tail in the report; it failed while loading or continuing.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
NOT_DETERMINISTIC = Rule(
    code="RC628",
    name="resume-run-not-deterministic",
    summary="Two fresh runs of the same command differ",
    why=(
        "Resume exactness can only be judged if the run is reproducible: with different losses "
        "before any kill, every mismatch after a resume is ambiguous."
    ),
    example_bad="random init without a seed; torch.backends.cudnn.benchmark",
    example_good="seed everything from a flag; torch.use_deterministic_algorithms(True)",
    fix=(
        "Seed torch, random and numpy from a fixed seed in the resume args; use deterministic "
        "algorithms; set tolerances (rtol/atol) only for unavoidable noise."
    ),
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
NO_CHECKPOINT = Rule(
    code="RC629",
    name="resume-no-checkpoint-before-kill",
    summary="No checkpoint was written to kill between",
    why=(
        "The gate kills the run between two checkpoints. If the run writes none within its "
        "steps (or not where `checkpoint-dir` points), there is nothing to resume from and "
        "nothing to judge."
    ),
    example_bad="--steps 12 --ckpt-every 1000",
    example_good="--steps 12 --ckpt-every 4",
    fix="Make the resume args save every few steps, and point `checkpoint-dir` at the directory.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
SAVE_KILL_SKIPPED = Rule(
    code="RC630",
    name="resume-save-kill-not-exercised",
    summary="No checkpoint write could be interrupted",
    why=(
        "Killing during a save needs the step shim to pause inside torch.save; without it (or "
        "with another writer) the save window is too short to hit, so atomicity was not tested."
    ),
    example_bad="python -I train.py  # shim unavailable",
    example_good="python train.py",
    fix="Let the shim load (no -I/-S/-E), or accept that this scenario is skipped.",
    family="resume",
    default_severity=_N,
    fix_applicability=_NONE,
)
REFERENCE_FAILED = Rule(
    code="RC631",
    name="resume-reference-run-failed",
    summary="The uninterrupted reference run failed",
    why=(
        "Without a successful uninterrupted run there is nothing to compare a resume with; the "
        "failure is usually one the smoke gate would name."
    ),
    example_bad="the resume args make the run crash",
    example_good="the resume args run to the end on CPU",
    fix="Run `rentcheck smoke` with the same command; fix what it reports.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)
NO_STEP_RECORDS = Rule(
    code="RC632",
    name="resume-no-step-records",
    summary="No per-step losses to compare",
    why=(
        "The gate compares each step's loss with the uninterrupted run. Without step lines in "
        "the log (or the shim's records), a relaunch that trains differently cannot be caught."
    ),
    example_bad="a log with no per-step loss line",
    example_good="print(f'step={step} loss={loss:.9e}', flush=True)",
    fix="Print one `step=N loss=X` line per optimizer step, or set `step-regex` to your format.",
    family="resume",
    default_severity=_E,
    fix_applicability=_NONE,
)

KILL_AFTER_END = Rule(
    code="RC634",
    name="resume-kill-after-last-step",
    summary="A kill would have landed at or after the run's last step",
    why=(
        "Killing a run that has already taken its last step and relaunching it tests nothing: "
        "a correct relaunch finds the run complete and takes no step, which looks like a "
        "restart from step 1. The scenario is reported as not run instead of being judged."
    ),
    example_bad="steps: 12 with a checkpoint every 12 steps (the first one is the last step)",
    example_good="steps: 12 with `{checkpoint_every}` (every 4 steps) in the resume args",
    fix=(
        "Give the resume run more `steps`, or make it save earlier (`{checkpoint_every}` in the "
        "resume args), so that a step lies between the first checkpoint and the end."
    ),
    family="resume",
    default_severity=_N,
    fix_applicability=_NONE,
)

RESUME_RULES: tuple[Rule, ...] = (
    STEP_RESET,
    WRONG_START,
    RNG_OR_DATA,
    OPTIMIZER,
    FINAL_DIFFERS,
    LEFTOVER_TEMP,
    NON_ATOMIC,
    PARTIAL_TOLERATED,
    RELAUNCH_FAILED,
    NOT_DETERMINISTIC,
    NO_CHECKPOINT,
    SAVE_KILL_SKIPPED,
    REFERENCE_FAILED,
    NO_STEP_RECORDS,
    KILL_AFTER_END,
)

RUN_RULES: tuple[Rule, ...] = (*SMOKE_RULES, *RESUME_RULES)

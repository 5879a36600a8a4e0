"""RC6xx: what the smoke and resume gates find (one rule per failure class)."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity, described_rule

__all__ = ["RESUME_RULES", "RUN_RULES", "SHIM_UNAVAILABLE", "SMOKE_CLASSES", "SMOKE_RULES"]

_NONE = Applicability.NONE
_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE


def _rule(family: str, severity: Severity, *text: str) -> Rule:
    code, name, summary, why, bad, good, fix = text
    return described_rule(code, name, summary, why, bad, good, fix, severity, family=family)


def _smoke(*text: str, severity: Severity = _E) -> Rule:
    return _rule("smoke", severity, *text)


def _resume(*text: str, severity: Severity = _E) -> Rule:
    return _rule("resume", severity, *text)


_PAID = "On a rented GPU this failure costs the boot, the setup and the download before it shows. "

# Failure class (the word used in `allow`, reports and JSON) -> rule.
SMOKE_CLASSES: dict[str, Rule] = {
    "import": _smoke(
        "RC601",
        "smoke-import-error",
        "The entrypoint fails to import a module",
        _PAID + "A missing dependency, a wrong extra or a module that moved is the cheapest bug "
        "there is to find locally: the process dies before the first step.",
        "import tinytrain_extras  # not installed, not in the repo",
        "pip install the package (and pin it), or import it from where it lives",
        "Install the missing package in the environment the box will use (and list it in the "
        "project's dependencies), or fix the import path.",
    ),
    "config": _smoke(
        "RC602",
        "smoke-config-error",
        "The entrypoint rejects its config or arguments",
        _PAID + "A missing key, a renamed option, a path that only exists on your laptop: the "
        "run stops during start-up, after the instance is already billing.",
        'config.json without "keep_last"; argparse: unrecognized arguments',
        "a config validated at start-up, and the same config committed with the code",
        "Add the missing key or fix the argument; check the smoke `args` and `command` too "
        "(they run in a copy of the project: name untracked data dirs in `link`).",
    ),
    "data": _smoke(
        "RC603",
        "smoke-data-error",
        "The data pipeline fails (dataset, sampler, collate)",
        _PAID + "Dataset and collate bugs surface at the first batch; a CPU run with a tiny "
        "dataset finds them in seconds, a GPU box finds them after the download.",
        "TensorDataset(features, labels[:-1])  # size mismatch",
        "datasets whose pieces are checked to have equal length",
        "Fix the dataset/collate code named in the traceback; run with num_workers=0 to get a "
        "direct traceback.",
    ),
    "shape-dtype": _smoke(
        "RC604",
        "smoke-shape-or-dtype-error",
        "A tensor shape or dtype mismatch in the model",
        _PAID + "Shape and dtype bugs are independent of the device: the same mismatch that "
        "kills the run on a GPU kills it on the CPU, in the first forward pass.",
        "nn.Linear(num_features + 1, hidden)  # mat1 and mat2 shapes cannot be multiplied",
        "nn.Linear(num_features, hidden)",
        "Fix the layer sizes or dtypes named in the traceback.",
    ),
    "hard-coded-cuda": _smoke(
        "RC605",
        "smoke-hard-coded-cuda",
        "The code calls CUDA unconditionally",
        "`.cuda()` or `device='cuda'` without a fallback fails anywhere without a GPU: the CPU "
        "smoke, a CPU eval box, a CI runner. A device variable makes the same code run both.",
        "model = build_model(cfg).cuda()",
        "model = build_model(cfg).to(device)  # device from a flag, cpu when no GPU",
        "Use a device variable (`torch.device(args.device)`) everywhere instead of .cuda().",
    ),
    "needs-gpu": _smoke(
        "RC606",
        "smoke-needs-gpu-dependency",
        "A dependency only works with an NVIDIA GPU",
        "flash-attn, bitsandbytes, apex, Triton kernels and friends fail to import or run on "
        "a CPU. If the code has no CPU path, the smoke cannot run; that is a decision to make "
        "explicitly (allow it), not a surprise.",
        "from flash_attn import flash_attn_func  # at module top, no fallback",
        "try: from flash_attn import ...; except ImportError: use torch SDPA",
        "Import the GPU-only package lazily with a CPU fallback, or waive the class with "
        '`allow = ["needs-gpu"]` in [tool.rentcheck.smoke].',
    ),
    "non-finite": _smoke(
        "RC607",
        "smoke-non-finite",
        "Loss or parameters become NaN/Inf in the first steps",
        _PAID + "A NaN from step one (bad init, log(0), an lr typo, division by a zero "
        "temperature) wastes the whole run; it is visible after two steps on a CPU.",
        "logits = model(x) / 0.0",
        "logits = model(x) / max(temperature, 1e-6)",
        "Find the first non-finite value (torch.autograd.set_detect_anomaly(True)); check lr, "
        "init and divisions. HF Trainer: pass --logging_nan_inf_filter false to see them.",
    ),
    "hang": _smoke(
        "RC608",
        "smoke-hang",
        "The run did not finish or reach N steps before the timeout",
        "A deadlocked DataLoader, a rendezvous waiting for peers or an interactive login prompt "
        "hangs a rented box until someone notices, billing all along.",
        "socket.create_server(...).accept()  # waits for a peer that never comes",
        "timeouts on every wait; trackers disabled or offline in smoke runs",
        "Look at the last log lines to see where it waits; raise `timeout` only if the run was "
        "merely slow.",
    ),
    "checkpoint-save": _smoke(
        "RC609",
        "smoke-checkpoint-save-broken",
        "Saving a checkpoint fails",
        "A save that fails (unpicklable object, missing directory, no permission) loses every "
        "step since the last one; found at the first save of the real run, it is hours lost.",
        "torch.save({'model': sd, 'collate': lambda x: x}, path)",
        "torch.save({'model': sd, 'optimizer': opt.state_dict()}, path)",
        "Fix what the save error names; make the smoke args save within the first steps "
        "(e.g. --ckpt-every 1).",
    ),
    "outside-sandbox": _smoke(
        "RC610",
        "smoke-wrote-outside-sandbox",
        "The run wrote into the project directory",
        "The smoke runs in a fresh temp dir. A run that writes next to its code instead of the "
        "working directory will fill the code disk on the box and mix outputs of runs.",
        "ckpt_dir = Path(__file__).parent / 'checkpoints'",
        "ckpt_dir = Path(args.ckpt_dir)  # relative to the working directory or an output root",
        "Write outputs relative to the working directory or a configured output path.",
        severity=_W,
    ),
    "needs-network": _smoke(
        "RC611",
        "smoke-needs-network",
        "The run needs network access or an uncached download",
        "A tiny smoke config should not download anything; with HF offline variables set, a "
        "download fails fast instead of hanging, and shows which asset the box will fetch.",
        "AutoModel.from_pretrained('big-model')  # in the smoke config",
        "a tiny config, or the asset pre-cached",
        "Use a tiny model in the smoke args, pre-cache the asset, or set `offline = false`.",
    ),
    "crash": _smoke(
        "RC612",
        "smoke-crashed",
        "The run exited with an error of no more specific class",
        _PAID + "Any crash in the first steps is a crash on the box.",
        "exit status 1 with a RuntimeError",
        "exit status 0",
        "Read the last log lines and the reproduce command in the report.",
    ),
    "no-steps": _smoke(
        "RC613",
        "smoke-no-optimizer-step",
        "The run exited 0 without any optimizer step",
        "A run that ends cleanly without training (an empty dataset, max_steps=0, a wrong "
        "subcommand) passes every exit-code check and trains nothing.",
        "python train.py --steps 0",
        "python train.py --steps 2",
        "Check that the smoke args make the run take steps; non-torch.optim optimizers are "
        "not counted (set `shim = off` for them).",
    ),
}

SHIM_UNAVAILABLE = _rule(
    "smoke",
    _N,
    "RC614",
    "step-shim-unavailable",
    "rentcheck's step shim could not see the run",
    "Without the shim, the gate judges by exit code and log lines only: it cannot count "
    "optimizer steps, stop after N, catch NaN parameters, or kill at an exact step. It happens "
    "with `python -I`/`-S`/`-E` or a launcher that replaces PYTHONPATH or sitecustomize.",
    "exec python -I train.py",
    "exec python train.py",
    "Drop -I/-S/-E and keep PYTHONPATH when launching, or set `shim = off` to accept it.",
)

SMOKE_RULES: tuple[Rule, ...] = (*SMOKE_CLASSES.values(), SHIM_UNAVAILABLE)

_KILL = "A rented box is preempted or killed without warning; the identical command must go on. "

STEP_RESET = _resume(
    "RC620",
    "resume-step-reset",
    "The relaunch started again from step 1",
    _KILL + "A deterministic trainer that ignores its checkpoint reproduces the reference "
    "exactly, losses and weights included; only the step numbers show it retrained all.",
    "model = build(); train(from_step=1)  # checkpoint never loaded",
    "load the newest valid checkpoint on every start, unconditionally",
    "Load the newest checkpoint on start-up without a --resume flag.",
)
WRONG_START = _resume(
    "RC621",
    "resume-wrong-start-step",
    "The relaunch did not continue after the last checkpoint",
    _KILL + "Continuing from an older checkpoint repeats paid work; continuing past the newest "
    "skips steps that were never trained.",
    "resume from checkpoints[0]",
    "resume from the newest checkpoint that loads",
    "Pick the newest complete checkpoint and continue at its step + 1.",
)
RNG_OR_DATA = _resume(
    "RC622",
    "resume-rng-or-data-position-not-restored",
    "The first resumed step differs from the uninterrupted run",
    "The first step after a resume sees a different batch or dropout mask when the data "
    "position or the RNG state is not in the checkpoint, so the run silently trains on a "
    "different stream than it would have.",
    "checkpoint = {'model': ..., 'optimizer': ...}  # no RNG, no data position",
    "checkpoint += {'rng': torch.get_rng_state(), 'position': (epoch, index, sampler_state)}",
    "Save and restore the torch/Python/NumPy RNG states and the data position (epoch, "
    "samples consumed, shuffle state).",
)
OPTIMIZER = _resume(
    "RC623",
    "resume-optimizer-or-scheduler-not-restored",
    "Losses diverge one step or more after the resume",
    "The first resumed loss is computed with restored weights, so it still matches; the "
    "update after it uses optimizer moments and the learning rate, which diverge when the "
    "optimizer or scheduler state is not restored.",
    "model.load_state_dict(ckpt['model'])  # optimizer and scheduler start fresh",
    "optimizer.load_state_dict(ckpt['optimizer']); scheduler.load_state_dict(ckpt['scheduler'])",
    "Save and restore the optimizer and LR scheduler state (and grad scaler, EMA).",
)
FINAL_DIFFERS = _resume(
    "RC624",
    "resume-final-state-differs",
    "The resumed run ended at another step or weights",
    _KILL + "The product of a run is its final weights: if they differ from an uninterrupted "
    "run, every resume changes the result.",
    "final weights sha256 differs from the reference",
    "bit-identical final weights on CPU",
    "Check optimizer/scheduler state and the final save; see the first mismatching step.",
)
LEFTOVER_TEMP = _resume(
    "RC625",
    "resume-leftover-temp-files",
    "Temp files are left in the checkpoint directory",
    "Temp files from interrupted saves that nobody removes pile up with every preemption "
    "until the disk or the inode quota is full, in the middle of a save.",
    "ckpt.pt.tmp left after each kill",
    "remove stale temp files on start-up (only those whose writer is gone)",
    "On start-up, delete temp files of checkpoint writers that are no longer running.",
    severity=_W,
)
NON_ATOMIC = _resume(
    "RC626",
    "resume-non-atomic-checkpoint",
    "The relaunch crashed on a checkpoint cut mid-save",
    "A checkpoint written straight onto its final name is truncated by a kill mid-save; the "
    "relaunch then loads the truncated file and crashes, and the run stays down while the box "
    "bills. Temp file + fsync + rename leaves either the old or the new checkpoint, never "
    "half of one.",
    "torch.save(state, 'ckpt-000008.pt')",
    "torch.save(state, tmp); fsync; os.replace(tmp, final); fsync(dir)",
    "Write to a temp name in the same directory, fsync, os.replace onto the final name, "
    "fsync the directory; on load, fall back to the previous checkpoint if the newest fails.",
)
PARTIAL_TOLERATED = _resume(
    "RC633",
    "resume-partial-checkpoint-tolerated",
    "A checkpoint was visible under its final name before it was complete",
    "A kill during the save left a truncated file under a checkpoint's final name; this "
    "relaunch coped (it skipped it or fell back), but any other reader (a pull, an eval job, a "
    "loader without that fallback) takes it for a checkpoint. Often the framework decides how "
    "it writes, so this is a note.",
    "torch.save(state, 'checkpoint-8/optimizer.pt')  # loader skips incomplete dirs",
    "write checkpoint-8 as tmp-checkpoint-8, then os.replace it onto checkpoint-8",
    "Write under a temp name and rename when complete, or keep the loader's fallback and "
    "make sure nothing else reads the newest checkpoint before it is complete.",
    severity=_N,
)
RELAUNCH_FAILED = _resume(
    "RC627",
    "resume-relaunch-failed",
    "The relaunch after a kill failed",
    _KILL + "A relaunch that crashes needs a person to fix it, while the box keeps billing.",
    "relaunch exits 1: KeyError: 'optimizer'",
    "relaunch continues and exits 0",
    "Read the relaunch's log tail in the report; it failed while loading or continuing.",
)
NOT_DETERMINISTIC = _resume(
    "RC628",
    "resume-run-not-deterministic",
    "Two fresh runs of the same command differ",
    "Resume exactness can only be judged if the run is reproducible: with different losses "
    "before any kill, every mismatch after a resume is ambiguous.",
    "random init without a seed; torch.backends.cudnn.benchmark",
    "seed everything from a flag; torch.use_deterministic_algorithms(True)",
    "Seed torch, random and numpy from a fixed seed in the resume args; use deterministic "
    "algorithms; set tolerances (rtol/atol) only for unavoidable noise.",
)
NO_CHECKPOINT = _resume(
    "RC629",
    "resume-no-checkpoint-before-kill",
    "No checkpoint was written to kill between",
    "The gate kills the run between two checkpoints. If the run writes none within its steps "
    "(or not where `checkpoint-dir` points), there is nothing to resume from and nothing to "
    "judge.",
    "--steps 12 --ckpt-every 1000",
    "--steps 12 --ckpt-every 4",
    "Make the resume args save every few steps, and point `checkpoint-dir` at the directory.",
)
SAVE_KILL_SKIPPED = _resume(
    "RC630",
    "resume-save-kill-not-exercised",
    "No checkpoint write could be interrupted",
    "Killing during a save needs the step shim to pause inside torch.save; without it (or "
    "with another writer) the save window is too short to hit, so atomicity was not tested.",
    "python -I train.py  # shim unavailable",
    "python train.py",
    "Let the shim load (no -I/-S/-E), or accept that this scenario is skipped.",
    severity=_N,
)
REFERENCE_FAILED = _resume(
    "RC631",
    "resume-reference-run-failed",
    "The uninterrupted reference run failed",
    "Without a successful uninterrupted run there is nothing to compare a resume with; the "
    "failure is usually one the smoke gate would name.",
    "the resume args make the run crash",
    "the resume args run to the end on CPU",
    "Run `rentcheck smoke` with the same command; fix what it reports.",
)
NO_STEP_RECORDS = _resume(
    "RC632",
    "resume-no-step-records",
    "No per-step losses to compare",
    "The gate compares each step's loss with the uninterrupted run. Without step lines in "
    "the log (or the shim's records), a relaunch that trains differently cannot be caught.",
    "a log with no per-step loss line",
    "print(f'step={step} loss={loss:.9e}', flush=True)",
    "Print one `step=N loss=X` line per optimizer step, or set `step-regex` to your format.",
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
)

RUN_RULES: tuple[Rule, ...] = (*SMOKE_RULES, *RESUME_RULES)

"""RC202 dataloader-workers-without-main-guard and RC204 hardcoded-cuda-device."""

from __future__ import annotations

from rentcheck.lint.python.common import python_check
from rentcheck.model import Applicability, Rule, Severity

MAIN_GUARD_RULE = Rule(
    code="RC202",
    name="dataloader-workers-without-main-guard",
    family="python",
    summary='Module-level DataLoader workers or processes with no `if __name__ == "__main__":`',
    why=(
        "Worker processes started with the spawn or forkserver method (the default on macOS "
        "and Windows, and what many launchers and CUDA setups force) re-import the main "
        "module. Without a main guard each worker runs the training script again: it "
        "builds another DataLoader, starts more workers, and fails with `An attempt has been "
        "made to start a new process before the current process has finished its "
        "bootstrapping phase` - or worse, trains several copies at once."
    ),
    example_bad="loader = DataLoader(ds, num_workers=4)\nfor batch in loader:\n    ...",
    example_good=(
        "def main():\n    loader = DataLoader(ds, num_workers=4)\n    ...\n\n"
        'if __name__ == "__main__":\n    main()'
    ),
    fix='Move the code into `main()` and call it under `if __name__ == "__main__":`.',
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

CUDA_RULE = Rule(
    code="RC204",
    name="hardcoded-cuda-device",
    family="python",
    summary='`.cuda()` / `"cuda"` device with no availability check or device setting',
    why=(
        "A hard-coded CUDA device makes the CPU smoke test impossible (`Torch not compiled "
        "with CUDA enabled`, `no CUDA GPUs are available`), so the cheapest check before "
        "renting cannot run, and the first real run of the code happens on the paid box. It "
        "also pins every tensor to `cuda:0` on multi-GPU machines."
    ),
    example_bad='model = model.cuda()\nx = torch.zeros(8, device="cuda")',
    example_good=(
        'device = torch.device(args.device if torch.cuda.is_available() else "cpu")\n'
        "model = model.to(device)"
    ),
    fix="Choose the device once (`--device`, or `cuda` if available else `cpu`) and pass it on.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)


MAIN_GUARD = python_check(MAIN_GUARD_RULE, "device_checks", "main_guard")
CUDA = python_check(CUDA_RULE, "device_checks", "cuda")

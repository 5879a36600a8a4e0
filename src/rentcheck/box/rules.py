"""The RC3xx (box audit) and RC4xx (live script mutation) rules: what each finding means."""

# ruff: noqa: S108 - "/dev/shm" here is prose about the box, not a temp file we create

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = ["BOX_RULES", "RULES_BY_CODE"]

_E = Severity.ERROR
_W = Severity.WARNING
_N = Severity.NOTE


BOX_RULES: tuple[Rule, ...] = (
    Rule(
        code="RC301",
        name="disk-budget-exceeds-free-space",
        summary="A configured path has less free space than the run's disk budget.",
        why=(
            "Checkpoints are written last, so a disk that fills up kills the final and most "
            "valuable save (`basic_ios::clear`, a truncated `latest.pth.tmp`) after hours of "
            "paid compute. The budget is checkpoint size x checkpoints kept + scratch, checked "
            "before launch."
        ),
        example_bad="budget 3 x 8 GiB + 20 GiB = 44 GiB, /root/autodl-tmp has 31 GiB free",
        example_good="budget 44 GiB, /root/autodl-tmp has 180 GiB free",
        fix=(
            "Free space (caches; old checkpoints only once a verified pull holds them), keep "
            "fewer checkpoints, or move the path to a larger mount; adjust "
            "[tool.rentcheck.audit.budget] if the estimate is wrong."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC302",
        name="inodes-nearly-exhausted",
        summary="A configured path's filesystem has (almost) no free inodes.",
        why=(
            "Millions of small files (tokenised shards, HF cache blobs, per-sample images) "
            "exhaust inodes while `df -h` still shows free bytes; the next file create fails "
            "with ENOSPC and the job dies mid-save. Some shared filesystems cap inodes far "
            "below their byte size."
        ),
        example_bad="/root/autodl-fs: 196,000 of 200,000 inodes used (98%)",
        example_good="/root/autodl-fs: 12,000 of 200,000 inodes used (6%)",
        fix=(
            "Pack small files into shards (tar/WebDataset, Arrow), or write to a filesystem "
            "with more inodes."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC303",
        name="cache-on-small-disk",
        summary="A download cache resolves onto a nearly full mount or the small root disk.",
        why=(
            "Model and package caches (`~/.cache/huggingface`, pip, torch hub, conda pkgs) are "
            "the real disk hogs; on rented boxes the system disk is small and filling it breaks "
            "the whole container, not just the download. A symlinked cache hides where the "
            "bytes land."
        ),
        example_bad="~/.cache/huggingface -> / (30 GiB system disk, 93% used)",
        example_good="export HF_HOME=/root/autodl-tmp/hf   # on the data disk",
        fix=(
            "Point the cache at the data disk (HF_HOME, TORCH_HOME, PIP_CACHE_DIR, "
            "CONDA_PKGS_DIRS) or symlink it there, and move the caches the small disk already "
            "holds."
        ),
        family="audit",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC304",
        name="durable-path-not-durable",
        summary=(
            "The checkpoint or durable path is not on a tier that survives the meter-stop action."
        ),
        why=(
            "Whatever sits on a tier the platform's stop/terminate/release verb destroys is "
            "gone the moment the meter stops. A 'durable' directory that is really a plain "
            "folder on the ephemeral root disk (a missing mount, a typo) looks fine until "
            "teardown."
        ),
        example_bad="durable=/root/autodl-fs, but /root/autodl-fs is on the same mount as /",
        example_good="durable=/root/autodl-fs on its own network mount listed in durable_mounts",
        fix=(
            "Write checkpoints to a durable mount (see the platform profile), or list the mount "
            "in [tool.rentcheck.audit] durable_mounts if it really survives the meter stop."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC305",
        name="cgroup-memory-below-dataloader-need",
        summary="The container's memory limit is below DataLoader workers x per-worker memory.",
        why=(
            "Each DataLoader worker is a forked copy of the dataset process. When their sum "
            "passes the cgroup limit the kernel OOM-kills a worker: a bare `Killed`, exit 137, "
            "no traceback. Host tools (`free`, `top`) show the host's RAM, not your limit."
        ),
        example_bad="memory.max 16 GiB, 8 workers x 3 GiB + 4 GiB main process",
        example_good="memory.max 64 GiB for the same workers, or 4 workers",
        fix=(
            "Use fewer workers, share data through memmap/Arrow instead of copying it per "
            "worker, or rent a box with a larger memory limit."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC306",
        name="oom-kills-already-recorded",
        summary="The box's memory cgroup has already OOM-killed processes before this run.",
        why=(
            "The oom_kill counter is the only authoritative OOM evidence; a nonzero baseline "
            "means this container (or an earlier job in it) already ran out of memory, and "
            "later watches must compare against this baseline instead of zero."
        ),
        example_bad="memory.events: oom_kill 3",
        example_good="memory.events: oom_kill 0",
        fix=(
            "Find what was killed (dmesg, your logs) before launching; the baseline is recorded "
            "in the audit facts for the watch gate."
        ),
        family="audit",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC307",
        name="cpu-quota-below-threads",
        summary="The CPU quota (cgroup cpu.max) is smaller than the configured thread count.",
        why=(
            "`nproc` and torch default to the host's cores, but a CPU quota throttles the "
            "container: more threads than quota cores thrash, starve the DataLoader and leave "
            "the GPU idle while the bill runs."
        ),
        example_bad="cpu.max 400000 100000 (4 cores), threads = 32",
        example_good="threads = 4 (OMP_NUM_THREADS=4, torch.set_num_threads(4))",
        fix=(
            "Set OMP_NUM_THREADS / torch.set_num_threads and num_workers to the quota, or lower "
            "`threads` in [tool.rentcheck.audit]."
        ),
        family="audit",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC308",
        name="shm-too-small-for-workers",
        summary="/dev/shm is smaller than the minimum while DataLoader workers are configured.",
        why=(
            "Workers hand batches to the main process through shared memory; Docker's default "
            "64 MB /dev/shm makes them die with `Bus error` or `DataLoader worker exited "
            "unexpectedly` on the first large batch."
        ),
        example_bad="/dev/shm 64 MiB with num_workers=8",
        example_good="/dev/shm 8 GiB (docker --shm-size=8g or --ipc=host)",
        fix=(
            "Start the container with a larger /dev/shm, or use "
            "torch.multiprocessing.set_sharing_strategy('file_system'), or num_workers=0."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC309",
        name="gpu-not-visible",
        summary="No usable GPU on a box that should have one (or fewer than expected).",
        why=(
            "A container without the GPU passed through, a CPU-only torch wheel or a driver "
            "that failed to load all run the job on the CPU, about 100x slower, billed at GPU "
            "rates."
        ),
        example_bad="nvidia-smi: command not found / torch.cuda.is_available() -> False",
        example_good="nvidia-smi lists 1 GPU and torch.cuda.is_available() -> True",
        fix=(
            "Check the instance really has a GPU (nvidia-smi inside the container), install the "
            "CUDA build of torch, or set expect_gpu = false for CPU-only boxes."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC310",
        name="driver-too-old-for-torch-cuda",
        summary="The NVIDIA driver supports an older CUDA than the installed torch was built for.",
        why=(
            "torch's CUDA runtime needs a driver at least as new as its CUDA version (within "
            "one major version only through minor-version compatibility). Otherwise CUDA init "
            "fails or kernels are missing: `The NVIDIA driver on your system is too old`."
        ),
        example_bad="driver 525.60 (CUDA 12.0), torch 2.5.1+cu124",
        example_good="driver 550.54 (CUDA 12.4), torch 2.5.1+cu124",
        fix=(
            "Install a torch wheel built for the driver's CUDA (e.g. --index-url .../cu121) or "
            "rent a box with a newer driver."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC311",
        name="vram-held-by-another-process",
        summary="Another process already holds most of a GPU's memory.",
        why=(
            "VRAM held by a zombie from a previous tenant or job makes the run OOM at the first "
            "forward pass, or share the GPU and run at a fraction of the speed you pay for."
        ),
        example_bad="GPU 0: 71000 of 81559 MiB used before launch",
        example_good="GPU 0: 4 of 81559 MiB used before launch",
        fix=(
            "Find the holder (nvidia-smi, fuser -v /dev/nvidia*) and stop it if it is yours; "
            "otherwise ask the provider for a clean box. rentcheck never kills processes."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC312",
        name="gpu-throttling",
        summary="A GPU reports active thermal, power-brake or hardware slowdown.",
        why=(
            "A card that throttles while idle will be slower still under load; a hardware "
            "slowdown or thermal event on a rented box usually means bad cooling or a failing "
            "board, and you pay full price for partial speed."
        ),
        example_bad="clocks_event_reasons.hw_thermal_slowdown: Active",
        example_good="clocks_event_reasons.active: 0x0000000000000001 (idle only)",
        fix="Ask the provider for another box; check again under load with `nvidia-smi dmon`.",
        family="audit",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC313",
        name="gpu-xid-errors",
        summary=(
            "The kernel log shows NVIDIA Xid errors (48 double-bit ECC, 79 fallen off the bus, "
            "...)."
        ),
        why=(
            "Xid 79 and 48 mean the GPU is gone or its memory is corrupting data: no code fix "
            "helps, only another box. Other Xids (ECC, row remap, GSP) predict the same. The "
            "ring buffer may also hold events from before your rental."
        ),
        example_bad="NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.",
        example_good="no Xid lines in dmesg",
        fix=(
            "Do not launch on this box: release it and rent another; report the bus id to the "
            "provider."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC314",
        name="no-detach-tool",
        summary="No tool to detach a job from the SSH session (tmux, screen, setsid).",
        why=(
            "A job started in the SSH session dies with it (SIGHUP) when the connection drops, "
            "which on rented boxes behind NAT and gateways happens several times a day."
        ),
        example_bad="tmux, screen and setsid: not found",
        example_good="tmux new-session -d -s train 'bash run.sh'",
        fix=(
            "Install tmux (apt-get install -y tmux) or use `setsid nohup cmd >log 2>&1 "
            "</dev/null &`."
        ),
        family="audit",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC315",
        name="audit-path-missing",
        summary=(
            "A configured path does not exist on the box; it was measured on its nearest parent."
        ),
        why=(
            "A typo or a missing mount makes the job write somewhere else than planned, usually "
            "onto the small root disk, and the disk checks then measured the wrong filesystem."
        ),
        example_bad="data=/root/autodl_tmp (no such directory)",
        example_good="data=/root/autodl-tmp",
        fix=(
            "Fix the path in [tool.rentcheck.audit.paths] or --path, or create it before the audit."
        ),
        family="audit",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC316",
        name="facts-unreadable",
        summary="A fact that an enabled check needs could not be read on the box.",
        why=(
            "An unreadable fact is unknown, not clean: an unreadable kernel log does not mean "
            "there are no Xid errors, and a missing cgroup file does not mean the memory is "
            "unlimited."
        ),
        example_bad="dmesg: Operation not permitted (kernel.dmesg_restrict=1)",
        example_good="run the audit as root, or check the fact by hand",
        fix="Run the audit with enough rights (often root) or verify the listed facts by hand.",
        family="audit",
        default_severity=_N,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC401",
        name="script-modified-while-running",
        summary="A shell script was changed in place while a live shell is executing it.",
        why=(
            "bash reads its script by byte offset from an open file (fd 255) while it runs. "
            "Editing that file in place (scp, rsync --inplace, `cat >`, many editors) makes the "
            "running shell continue at the old offset in the new text: repeated blocks, "
            "restarted epochs, skipped steps. Replacing the file by rename (new inode) is safe."
        ),
        example_bad="scp run.sh box:run.sh   # while `bash run.sh` is running",
        example_good="rentcheck push run.sh box:run.sh   # temp file beside it, then rename",
        fix=(
            "Stop and relaunch the affected run if its behaviour matters; push scripts with "
            "`rentcheck push` (rename) from now on."
        ),
        family="live-script",
        default_severity=_E,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code="RC402",
        name="python-script-changed-while-running",
        summary="The script file of a running Python process changed after the process started.",
        why=(
            "Python compiled the old text at start, so the process and the file now disagree: "
            "tracebacks show the wrong lines, and spawn-started workers (DataLoader with the "
            "spawn start method, multiprocessing) re-import the new file and mix versions. "
            "Python keeps no handle on the file, so a rename cannot be told apart from an "
            "in-place edit."
        ),
        example_bad="edit train.py on the box while `python train.py` runs",
        example_good="push the new file under a new name, or push after the run ends",
        fix="Restart the run if the new code matters; otherwise keep edits until it finishes.",
        family="live-script",
        default_severity=_W,
        fix_applicability=Applicability.NONE,
    ),
)

RULES_BY_CODE = {rule.code: rule for rule in BOX_RULES}

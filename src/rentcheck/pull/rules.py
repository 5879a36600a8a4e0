"""The RC5xx rules: every distinct outcome of building, checking and verifying a pull."""

from __future__ import annotations

from rentcheck.model import Applicability, Rule, Severity

__all__ = [
    "COMPRESSED_RANGE_UNSCANNED",
    "DCP_CHECKPOINT_DAMAGED",
    "DEEP_LOAD_FAILED",
    "DIGEST_MISMATCH",
    "EMPTY_PULL",
    "FILE_UNREADABLE",
    "FINITE_SCAN_SKIPPED",
    "KNOWN_FULL_PICKLE",
    "LEFTOVER_PARTIAL",
    "MANIFEST_INVALID",
    "METRICS_UNPARSABLE",
    "MISSING_FILE",
    "NON_FINITE_NOTE",
    "NON_FINITE_TENSOR",
    "PATH_ESCAPES_ROOT",
    "PICKLE_MALFORMED",
    "PULL_RULES",
    "RULES_BY_CODE",
    "RUN_ID_MISMATCH",
    "SAFETENSORS_MALFORMED",
    "SHARD_INDEX_MISMATCH",
    "SIZE_MISMATCH",
    "SPECIAL_FILE",
    "TORCHSCRIPT_ARCHIVE",
    "TORCH_WILL_REFUSE",
    "TORCH_ZIP_CORRUPT",
    "UNEXPECTED_FILE",
    "UNKNOWN_CHECKPOINT_FORMAT",
    "UNPROVEN_LOAD_SAFETY",
    "UNSAFE_PICKLE",
    "VERIFIED_MARKER_STALE",
    "VERIFY_LIMIT_REACHED",
]

MANIFEST_INVALID = "RC501"
RUN_ID_MISMATCH = "RC502"
EMPTY_PULL = "RC503"
PATH_ESCAPES_ROOT = "RC504"
SPECIAL_FILE = "RC505"
MISSING_FILE = "RC506"
UNEXPECTED_FILE = "RC507"
SIZE_MISMATCH = "RC508"
DIGEST_MISMATCH = "RC509"
LEFTOVER_PARTIAL = "RC510"
SAFETENSORS_MALFORMED = "RC511"
TORCH_ZIP_CORRUPT = "RC512"
PICKLE_MALFORMED = "RC513"
UNSAFE_PICKLE = "RC514"
UNKNOWN_CHECKPOINT_FORMAT = "RC515"
NON_FINITE_TENSOR = "RC516"
FINITE_SCAN_SKIPPED = "RC517"
METRICS_UNPARSABLE = "RC518"
DEEP_LOAD_FAILED = "RC519"
FILE_UNREADABLE = "RC520"
VERIFIED_MARKER_STALE = "RC521"
# 53x: what the real loaders would do (issue 16); numbered apart from the 52x verify driver's.
TORCH_WILL_REFUSE = "RC530"
NON_FINITE_NOTE = "RC531"
TORCHSCRIPT_ARCHIVE = "RC532"
VERIFY_LIMIT_REACHED = "RC533"
KNOWN_FULL_PICKLE = "RC534"
SHARD_INDEX_MISMATCH = "RC535"
DCP_CHECKPOINT_DAMAGED = "RC536"
COMPRESSED_RANGE_UNSCANNED = "RC537"
UNPROVEN_LOAD_SAFETY = "RC538"

_E = Severity.ERROR
_NONE = Applicability.NONE


PULL_RULES: tuple[Rule, ...] = (
    Rule(
        code=MANIFEST_INVALID,
        name="manifest-invalid",
        summary=(
            "PULL_MANIFEST.json is missing, not JSON, or breaks the rentcheck/manifest/v1 schema."
        ),
        why=(
            "The manifest is the only evidence of what the box held. A manifest with absolute "
            "or `..` paths, duplicate entries or malformed digests is either damaged or "
            "hostile, and trusting it could make the verifier read or bless files outside the "
            "pulled directory."
        ),
        example_bad=(
            '{"schema": "rentcheck/manifest/v1", "files": [{"path": "../.ssh/id_rsa", ...}]}'
        ),
        example_good=(
            "rentcheck manifest build /root/results   # on the box, then pull the file unchanged"
        ),
        fix="Rebuild the manifest on the box with `rentcheck manifest build` and pull it again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=RUN_ID_MISMATCH,
        name="manifest-run-id-mismatch",
        summary="The manifest belongs to a different run than the one being verified.",
        why=(
            "A manifest left over from an earlier sweep at the same path verifies the old files "
            "and lets the box with the new results be destroyed."
        ),
        example_bad="expected run id sweep-0412, manifest says sweep-0398",
        example_good="rentcheck manifest build ROOT --run-id sweep-0412",
        fix="Build the manifest for this run on the box (pass --run-id) and pull it again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=EMPTY_PULL,
        name="empty-pull",
        summary="The manifest lists no files, or nothing was pulled.",
        why=(
            "An empty result is never success: it usually means the run wrote elsewhere or the "
            "aggregation step found nothing, and teardown would lose the real outputs."
        ),
        example_bad='{"files": []}',
        example_good='{"files": [{"path": "best.pt", ...}]}',
        fix="Check where the run wrote its outputs and build the manifest on that directory.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=PATH_ESCAPES_ROOT,
        name="path-escapes-root",
        summary="A path or symlink in the pulled directory resolves outside it.",
        why=(
            "A symlink to /etc/passwd or ~/.ssh inside a pulled directory makes a verifier or a "
            "later loader read or overwrite files that were never part of the run. Such links "
            "are never opened."
        ),
        example_bad="results/best.pt -> /etc/passwd",
        example_good="results/best.pt (a regular file)",
        fix="On the box, copy the target into the root in place of the link (`cp "
        '--remove-destination "$(readlink -f LINK)" LINK`) and pull again.',
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=SPECIAL_FILE,
        name="special-file",
        summary=(
            "A pulled entry is not a regular file (device, FIFO, socket, directory symlink) or "
            "its name is not valid UTF-8."
        ),
        why=(
            "Reading a FIFO or device can block or return endless data; names that are not "
            "UTF-8 cannot be matched to the manifest. None of these can be verified, so they "
            "are not opened."
        ),
        example_bad="results/pipe (a FIFO)",
        example_good="results/log.txt (a regular file)",
        fix="Remove the entry from the pulled directory, or rename it to valid UTF-8.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=MISSING_FILE,
        name="missing-file",
        summary="A file listed in the manifest is not in the pulled directory.",
        why=(
            "An interrupted or partial transfer leaves files out; destroying the box then loses "
            "them."
        ),
        example_bad="manifest lists ckpt/last.pt, local copy has only ckpt/best.pt",
        example_good="every manifest path exists locally",
        fix="Re-run the pull (it resumes) and verify again before teardown.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=UNEXPECTED_FILE,
        name="unexpected-file",
        summary="A file in the pulled directory is not listed in the manifest.",
        why=(
            "Stale files from an earlier pull, or files written after the manifest was built, "
            "make the local copy differ from what the box certified."
        ),
        example_bad="local best_old.pt not in the manifest",
        example_good="local tree == manifest roster",
        fix="Pull into a fresh directory, or rebuild the manifest if the box gained files.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=SIZE_MISMATCH,
        name="size-mismatch",
        summary="A pulled file's size differs from the manifest.",
        why=(
            "A short file is a truncated transfer; a longer one was appended to. Either way the "
            "bytes are not the ones the box hashed."
        ),
        example_bad="best.pt: manifest 1073741824 bytes, local 536870912",
        example_good="sizes equal",
        fix="Re-pull the file (rsync --partial resumes) and verify again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=DIGEST_MISMATCH,
        name="digest-mismatch",
        summary="A pulled file's SHA-256 differs from the manifest.",
        why=(
            "No loader notices a flipped bit inside tensor data; only a hash taken on the box "
            "and compared here proves the copy is exact."
        ),
        example_bad="best.pt: sha256 3fa1... != manifest 9c07...",
        example_good="sha256 equal",
        fix="Pull again: `rentcheck pull` fetches a file whose digest differs again whole "
        "(the local copy is replaced only once the new one is complete), then verifies.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=LEFTOVER_PARTIAL,
        name="leftover-partial-file",
        summary=(
            "A temporary or partial file (*.tmp, *.partial, .tmpXXXXXX, tmp-checkpoint-*) was "
            "found."
        ),
        why=(
            "A save or transfer that never finished leaves such files behind. Upstream tools "
            "hashed them on one side and ignored them on the other, so an unfinished checkpoint "
            "could be certified or silently dropped. They are recorded, never hashed, and "
            "reported."
        ),
        example_bad="ckpt/model.safetensors.tmp",
        example_good="ckpt/model.safetensors",
        fix=(
            "Find out which write did not finish and let it finish (watch the job). If its "
            "writer is gone, keep the file under a name that is not a leftover (`mv X.tmp "
            "X.unfinished`), rebuild the manifest and pull it: never delete it before the pull."
        ),
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=SAFETENSORS_MALFORMED,
        name="safetensors-malformed",
        summary="A .safetensors file has a bad header, offsets or length (or its index disagrees).",
        why=(
            "safetensors stores its own size, so truncation, padding, git-lfs pointers and HTML "
            "error pages saved under a model's name show up as header or offset errors."
        ),
        example_bad="header length 2305843009213693952 (a git-lfs pointer)",
        example_good="header + contiguous data",
        fix="Re-pull or re-save the file; a git-lfs pointer needs `git lfs pull`.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=TORCH_ZIP_CORRUPT,
        name="torch-zip-corrupt",
        summary=(
            "A torch.save zip checkpoint has a damaged central directory, a record whose CRC32 "
            "does not match, or a missing data.pkl or storage record."
        ),
        why=(
            "torch.load never checks the CRC32 that torch.save writes, so a flipped bit in "
            "tensor data loads silently. Checking every record's CRC finds it even without a "
            "manifest."
        ),
        example_bad="ckpt/data/3: CRC32 0x1a2b3c4d != 0x1a2b3c4c",
        example_good="all records match",
        fix="Re-pull the file; if the copy on the box is also damaged, re-save from a good state.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=PICKLE_MALFORMED,
        name="pickle-malformed",
        summary=(
            "A pickle stream (torch data.pkl, legacy torch file, .pkl) is not well-formed up to "
            "STOP."
        ),
        why=(
            "A truncated or damaged pickle cannot be loaded; a legacy torch file whose storages "
            "do not add up to the file length was cut short."
        ),
        example_bad="legacy.pt ends 100 bytes early",
        example_good="pickle ends at STOP, storages fill the file",
        fix="Re-pull or re-save the file.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=UNSAFE_PICKLE,
        name="unsafe-pickle",
        summary=(
            "A pickle references a global outside the state-dict allow-list, or uses opcodes a "
            "state dict never needs."
        ),
        why=(
            "Loading a pickle runs whatever it names: `os.system`, `builtins.eval`, "
            "`subprocess`. Denylists keep being bypassed, so only the globals a plain state "
            "dict needs (torch rebuild helpers, storage types, dtypes, OrderedDict) are "
            "accepted. Nothing is executed to find this out."
        ),
        example_bad="GLOBAL 'posix system'",
        example_good="GLOBAL 'torch._utils _rebuild_tensor_v2'",
        fix=(
            "Do not load the file. Save tensors with safetensors or a plain state_dict; allow "
            "an extra global only after reading what it does. A framework's own checkpoint "
            "needs its preset, which the message names: `[tool.rentcheck.verify] presets = "
            '["omegaconf"]` (an OmegaConf/Hydra DictConfig in Lightning hyperparameters), '
            "also hf-trainer, accelerate, lightning, numpy-rng; a class of your own: "
            "`--allow-global mypkg.Config` or `allow_globals`."
        ),
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=UNKNOWN_CHECKPOINT_FORMAT,
        name="unknown-checkpoint-format",
        summary=(
            "A file named like a checkpoint (.pt, .pth, .ckpt) is neither a torch zip nor a pickle."
        ),
        why=(
            "A git-lfs pointer, an HTML error page or an empty file saved under a checkpoint's "
            "name is the most common 'checkpoint' that fails to load after the box is gone."
        ),
        example_bad="best.pt starts with 'version https://git-lfs'",
        example_good="best.pt starts with PK\\x03\\x04",
        fix="Fetch the real file (git lfs pull, re-download) and verify again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=NON_FINITE_TENSOR,
        name="non-finite-tensor",
        summary="A floating-point tensor contains NaN or Inf values.",
        why=(
            "A diverged run keeps saving checkpoints; loaders accept NaN weights without "
            "complaint. Finding it before teardown leaves the box available to resume from an "
            "earlier step."
        ),
        example_bad="layers.3.weight (BF16): 12 NaN, 0 Inf",
        example_good="every floating tensor is finite",
        fix="Resume from the last finite checkpoint, lower the learning rate or fix the loss.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=FINITE_SCAN_SKIPPED,
        name="finite-scan-skipped",
        summary="The NaN/Inf scan could not run for a file (numpy missing, big-endian data).",
        why="An unscanned checkpoint may be non-finite; the digest still proves it is intact.",
        example_bad="numpy is not installed",
        example_good="pip install numpy",
        fix="Install numpy in the environment that runs rentcheck.",
        family="pull",
        default_severity=Severity.WARNING,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=METRICS_UNPARSABLE,
        name="metrics-unparsable",
        summary="A .json or .yaml file in the pull does not parse.",
        why=(
            "A metrics file that was cut short or never finished writing is the evidence the "
            "run is judged by; an unparsable one is as good as missing."
        ),
        example_bad='metrics.json: {"loss": 0.31',
        example_good='{"loss": 0.31}',
        fix="Re-pull the file or re-run the evaluation that writes it.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=DEEP_LOAD_FAILED,
        name="deep-load-failed",
        summary="With --deep, torch.load(weights_only=True) or safetensors.safe_open failed.",
        why=(
            "Structure and safety checks passed, but the reference loader still refused the "
            "file (unsupported pickle protocol, dtype unknown to this torch)."
        ),
        example_bad="torch.load: Unsupported operand 149",
        example_good="torch.load(..., weights_only=True) succeeds",
        fix="Re-save with a plain torch.save(state_dict) (protocol 2) or with safetensors.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=FILE_UNREADABLE,
        name="file-unreadable",
        summary="A pulled file could not be read, or changed while it was being verified.",
        why=(
            "A file that cannot be read cannot be verified; one that changes during the read is "
            "still being written by something."
        ),
        example_bad="best.pt: Permission denied",
        example_good="best.pt readable and unchanged",
        fix="Fix permissions or wait for the writer, then rerun.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=VERIFIED_MARKER_STALE,
        name="verified-marker-stale",
        summary="A file recorded in PULL_VERIFIED.json is gone or changed since it was verified.",
        why=(
            "The marker certifies bytes, not names: a checkpoint deleted or rewritten after "
            "verification is no longer covered, and teardown would destroy the only good copy."
        ),
        example_bad="best.pt: size 1073741824 in the marker, 0 now",
        example_good="every marker file unchanged",
        fix="Verify again (`rentcheck verify LOCAL_ROOT`) before teardown.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=TORCH_WILL_REFUSE,
        name="torch-will-refuse",
        summary=(
            "torch will refuse to load this with weights_only=True, though nothing in it is "
            "hostile."
        ),
        why=(
            "torch.load's weights_only unpickler implements a subset of protocol 2 and checks "
            "the type BUILD applies to; a pickle written at protocol 4 (FRAME, MEMOIZE), a "
            "legacy .tar checkpoint or a BUILD on an unlisted type fails there, so the file "
            "you pulled will not load the way your training code loads it."
        ),
        example_bad="torch.save(sd, 'ckpt.pt', pickle_protocol=4)",
        example_good="torch.save(sd, 'ckpt.pt')  # protocol 2, the default",
        fix=(
            "Re-save it with the default torch.save (protocol 2) while the box is up, or "
            "convert it with a trusted full load; allow a type only after reading what it is."
        ),
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=NON_FINITE_NOTE,
        name="non-finite-scalar-note",
        summary="A callback or loop scalar (not a weight) is NaN or Inf.",
        why=(
            "Lightning's ModelCheckpoint.kth_value and EarlyStopping.best_score start at "
            "+-inf by design; they say nothing about the model. Only tensors under the paths "
            "the NaN/Inf policy names as notes (default callbacks.* and loops.*) land here."
        ),
        example_bad="callbacks.EarlyStopping{...}.best_score (F32): 0 NaN, 1 Inf",
        example_good="state_dict.layer.weight finite",
        fix=(
            "Nothing, if the path is a sentinel; move a real tensor out of those paths or "
            'set nonfinite_paths = {"callbacks.*" = "fail"} to make it fail.'
        ),
        family="pull",
        default_severity=Severity.NOTE,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=TORCHSCRIPT_ARCHIVE,
        name="torchscript-archive",
        summary="TorchScript archive: weights_only refuses it, torch.jit.load runs its code.",
        why=(
            "torch.load hands a TorchScript zip to torch.jit.load, which runs the archive's "
            "code; with weights_only=True it refuses the file outright. Its records and CRCs "
            "were checked and its digest proves it arrived intact, but what it runs is not "
            "proved safe, and it is not a state dict (a refusal since issue 27: it was a "
            "warning, i.e. a pass)."
        ),
        example_bad="torch.jit.save(torch.jit.script(model), 'model.pt')",
        example_good="torch.save(model.state_dict(), 'model.pt')",
        fix=(
            "Save a state_dict as well. To accept the archive deliberately (you trust its "
            "author and load it with torch.jit.load), list it under the verify section's "
            'per-file-ignores: `"path/model.pt" = ["RC532"]`.'
        ),
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=VERIFY_LIMIT_REACHED,
        name="verify-limit-reached",
        summary=(
            "A file needs more work to prove safe than any real checkpoint (references, "
            "opcodes, pickles, zip entries): treated as hostile."
        ),
        why=(
            "Every per-file cost is capped so a crafted file cannot spend gigabytes or minutes "
            "of the verifier; real checkpoints stay orders of magnitude below each cap, so a "
            "file that reaches one is built to exhaust a scanner, not damaged in transit."
        ),
        example_bad="a pickle of one TUPLE that references the same list a million times",
        example_good="a state dict of 80k tensors",
        fix="Do not load the file; find out who wrote it. Re-pulling will not help.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=KNOWN_FULL_PICKLE,
        name="known-full-pickle",
        summary="A file a per-file policy names as a known full pickle (e.g. training_args.bin).",
        why=(
            "HF Trainer saves its TrainingArguments as a full pickle; torch.load with "
            "weights_only=True refuses it and nothing needs to load it to resume. It was "
            "scanned: every global it names is on its per-file list, none is allow-listed for "
            "any other file."
        ),
        example_bad="training_args.bin names transformers.training_args.TrainingArguments",
        example_good='presets = ["hf-trainer"]',
        fix="Load it only with torch.load(weights_only=False) from a source you trust.",
        family="pull",
        default_severity=Severity.NOTE,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=SHARD_INDEX_MISMATCH,
        name="shard-index-mismatch",
        summary=(
            "A pytorch_model.bin.index.json names a shard that is missing, or tensors a shard "
            "does not hold."
        ),
        why=(
            "from_pretrained loads every shard the index names; one shard deleted or "
            "truncated on the box fails only when the model is loaded, after the box is gone."
        ),
        example_bad="pytorch_model-00002-of-00002.bin named by the index but not pulled",
        example_good="every shard present, holding exactly the tensors mapped to it",
        fix="Pull the missing shard again (or re-save the model) and verify again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=DCP_CHECKPOINT_DAMAGED,
        name="dcp-checkpoint-damaged",
        summary=(
            "A torch.distributed.checkpoint directory whose .metadata names data a .distcp "
            "file does not hold."
        ),
        why=(
            "DCP reads each tensor at the offset and length .metadata records; a missing or "
            "truncated .distcp loads nothing, or garbage, only when training resumes."
        ),
        example_bad="__0_0.distcp is 512 bytes, .metadata places a tensor at bytes 600..1000",
        example_good="every byte range .metadata names lies inside its .distcp file",
        fix="Pull the directory again, or re-save it on the box, and verify again.",
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=COMPRESSED_RANGE_UNSCANNED,
        name="compressed-range-unscanned",
        summary=(
            "A compressed checkpoint or part of one (a DCP range written with the ZStandard "
            "extension, an lz4 joblib file) could not be decompressed here, so only its digest "
            "was checked."
        ),
        why=(
            "DCP's loader decompresses each such range with zstandard or pyzstd, joblib an lz4 "
            "file with lz4, and then reads what comes out; without that module here its "
            "structure, safety and NaN/Inf were not checked, and a NaN weight in it would pass "
            "unseen."
        ),
        example_bad="FileSystemWriter(path, _extensions=[ZStandard()]) ranges, zstandard missing",
        example_good="pip install zstandard, then verify again",
        fix=(
            "Install the module it names (`pip install zstandard`, `pip install lz4`) where "
            "rentcheck runs and verify again."
        ),
        family="pull",
        default_severity=Severity.WARNING,
        fix_applicability=Applicability.NONE,
    ),
    Rule(
        code=UNPROVEN_LOAD_SAFETY,
        name="unproven-load-safety",
        summary=(
            "A file a loader would unpickle (by its name or its bytes) whose content rentcheck "
            "cannot prove safe: an unmodelled container shape, data before a zip, a duplicate "
            "or case-variant member name, a tar torch.load would unpack, a pickle under a "
            "numpy name."
        ),
        why=(
            "Each loader decides by its own rules what to read: np.load(allow_pickle=True) "
            "unpickles any file without the .npy or zip magic, torch.load unpacks the tar "
            "member `storages` wherever it sits, torch's zip reader looks names up "
            "case-insensitively, Python's zipfile reads past data prepended to an archive. "
            "A file verify cannot read the way its loader will is not proved safe, so it is "
            "refused rather than passed as data."
        ),
        example_bad="weights.npy that begins with a pickle (np.load falls back to pickle.load)",
        example_good="np.save('weights.npy', array) / torch.save(state_dict, 'model.pt')",
        fix=(
            "Re-save the file with its writer (torch.save, np.save, safetensors). To accept it "
            "deliberately, list it under the verify section's per-file-ignores, e.g. "
            '`[tool.rentcheck.verify.per-file-ignores] "path/file.npy" = ["RC538"]` '
            "(its digest is still checked; load it only from a source you trust)."
        ),
        family="pull",
        default_severity=Severity.ERROR,
        fix_applicability=Applicability.NONE,
    ),
)

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in PULL_RULES}

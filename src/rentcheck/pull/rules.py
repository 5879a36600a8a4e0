"""The RC5xx rules: every distinct outcome of building, checking and verifying a pull."""

from __future__ import annotations

import functools

from rentcheck.model import Applicability, Rule, Severity, described_rule

__all__ = [
    "DEEP_LOAD_FAILED",
    "DIGEST_MISMATCH",
    "EMPTY_PULL",
    "FILE_UNREADABLE",
    "FINITE_SCAN_SKIPPED",
    "LEFTOVER_PARTIAL",
    "MANIFEST_INVALID",
    "METRICS_UNPARSABLE",
    "MISSING_FILE",
    "NON_FINITE_TENSOR",
    "PATH_ESCAPES_ROOT",
    "PICKLE_MALFORMED",
    "PULL_RULES",
    "RULES_BY_CODE",
    "RUN_ID_MISMATCH",
    "SAFETENSORS_MALFORMED",
    "SIZE_MISMATCH",
    "SPECIAL_FILE",
    "TORCH_ZIP_CORRUPT",
    "UNEXPECTED_FILE",
    "UNKNOWN_CHECKPOINT_FORMAT",
    "UNSAFE_PICKLE",
    "VERIFIED_MARKER_STALE",
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

_E = Severity.ERROR
_NONE = Applicability.NONE


_rule = functools.partial(described_rule, family="pull")


PULL_RULES: tuple[Rule, ...] = (
    _rule(
        MANIFEST_INVALID,
        "manifest-invalid",
        "PULL_MANIFEST.json is missing, not JSON, or breaks the rentcheck/manifest/v1 schema.",
        "The manifest is the only evidence of what the box held. A manifest with absolute or `..` "
        "paths, duplicate entries or malformed digests is either damaged or hostile, and trusting "
        "it could make the verifier read or bless files outside the pulled directory.",
        '{"schema": "rentcheck/manifest/v1", "files": [{"path": "../.ssh/id_rsa", ...}]}',
        "rentcheck manifest build /root/results   # on the box, then pull the file unchanged",
        "Rebuild the manifest on the box with `rentcheck manifest build` and pull it again.",
    ),
    _rule(
        RUN_ID_MISMATCH,
        "manifest-run-id-mismatch",
        "The manifest belongs to a different run than the one being verified.",
        "A manifest left over from an earlier sweep at the same path verifies the old files and "
        "lets the box with the new results be destroyed.",
        "expected run id sweep-0412, manifest says sweep-0398",
        "rentcheck manifest build ROOT --run-id sweep-0412",
        "Build the manifest for this run on the box (pass --run-id) and pull it again.",
    ),
    _rule(
        EMPTY_PULL,
        "empty-pull",
        "The manifest lists no files, or nothing was pulled.",
        "An empty result is never success: it usually means the run wrote elsewhere or the "
        "aggregation step found nothing, and teardown would lose the real outputs.",
        '{"files": []}',
        '{"files": [{"path": "best.pt", ...}]}',
        "Check where the run wrote its outputs and build the manifest on that directory.",
    ),
    _rule(
        PATH_ESCAPES_ROOT,
        "path-escapes-root",
        "A path or symlink in the pulled directory resolves outside it.",
        "A symlink to /etc/passwd or ~/.ssh inside a pulled directory makes a verifier or a later "
        "loader read or overwrite files that were never part of the run. Such links are never "
        "opened.",
        "results/best.pt -> /etc/passwd",
        "results/best.pt (a regular file)",
        "Delete the link and pull the real file; on the box, copy targets into the root.",
    ),
    _rule(
        SPECIAL_FILE,
        "special-file",
        "A pulled entry is not a regular file (device, FIFO, socket, directory symlink) or its "
        "name is not valid UTF-8.",
        "Reading a FIFO or device can block or return endless data; names that are not UTF-8 "
        "cannot be matched to the manifest. None of these can be verified, so they are not "
        "opened.",
        "results/pipe (a FIFO)",
        "results/log.txt (a regular file)",
        "Remove the entry from the pulled directory, or rename it to valid UTF-8.",
    ),
    _rule(
        MISSING_FILE,
        "missing-file",
        "A file listed in the manifest is not in the pulled directory.",
        "An interrupted or partial transfer leaves files out; destroying the box then loses them.",
        "manifest lists ckpt/last.pt, local copy has only ckpt/best.pt",
        "every manifest path exists locally",
        "Re-run the pull (it resumes) and verify again before teardown.",
    ),
    _rule(
        UNEXPECTED_FILE,
        "unexpected-file",
        "A file in the pulled directory is not listed in the manifest.",
        "Stale files from an earlier pull, or files written after the manifest was built, make "
        "the local copy differ from what the box certified.",
        "local best_old.pt not in the manifest",
        "local tree == manifest roster",
        "Pull into a fresh directory, or rebuild the manifest if the box gained files.",
    ),
    _rule(
        SIZE_MISMATCH,
        "size-mismatch",
        "A pulled file's size differs from the manifest.",
        "A short file is a truncated transfer; a longer one was appended to. Either way the bytes "
        "are not the ones the box hashed.",
        "best.pt: manifest 1073741824 bytes, local 536870912",
        "sizes equal",
        "Re-pull the file (rsync --partial resumes) and verify again.",
    ),
    _rule(
        DIGEST_MISMATCH,
        "digest-mismatch",
        "A pulled file's SHA-256 differs from the manifest.",
        "No loader notices a flipped bit inside tensor data; only a hash taken on the box and "
        "compared here proves the copy is exact.",
        "best.pt: sha256 3fa1... != manifest 9c07...",
        "sha256 equal",
        "Delete the local copy, pull it again, and verify again.",
    ),
    _rule(
        LEFTOVER_PARTIAL,
        "leftover-partial-file",
        "A temporary or partial file (*.tmp, *.partial, .tmpXXXXXX, tmp-checkpoint-*) was found.",
        "A save or transfer that never finished leaves such files behind. Upstream tools hashed "
        "them on one side and ignored them on the other, so an unfinished checkpoint could be "
        "certified or silently dropped. They are recorded, never hashed, and reported.",
        "ckpt/model.safetensors.tmp",
        "ckpt/model.safetensors",
        "Find out which write did not finish; finish or delete it on the box and rebuild the "
        "manifest.",
    ),
    _rule(
        SAFETENSORS_MALFORMED,
        "safetensors-malformed",
        "A .safetensors file has a bad header, offsets or length (or its index disagrees).",
        "safetensors stores its own size, so truncation, padding, git-lfs pointers and HTML "
        "error pages saved under a model's name show up as header or offset errors.",
        "header length 2305843009213693952 (a git-lfs pointer)",
        "header + contiguous data",
        "Re-pull or re-save the file; a git-lfs pointer needs `git lfs pull`.",
    ),
    _rule(
        TORCH_ZIP_CORRUPT,
        "torch-zip-corrupt",
        "A torch.save zip checkpoint has a damaged central directory, a record whose CRC32 does "
        "not match, or a missing data.pkl or storage record.",
        "torch.load never checks the CRC32 that torch.save writes, so a flipped bit in tensor "
        "data loads silently. Checking every record's CRC finds it even without a manifest.",
        "ckpt/data/3: CRC32 0x1a2b3c4d != 0x1a2b3c4c",
        "all records match",
        "Re-pull the file; if the copy on the box is also damaged, re-save from a good state.",
    ),
    _rule(
        PICKLE_MALFORMED,
        "pickle-malformed",
        "A pickle stream (torch data.pkl, legacy torch file, .pkl) is not well-formed up to STOP.",
        "A truncated or damaged pickle cannot be loaded; a legacy torch file whose storages do not "
        "add up to the file length was cut short.",
        "legacy.pt ends 100 bytes early",
        "pickle ends at STOP, storages fill the file",
        "Re-pull or re-save the file.",
    ),
    _rule(
        UNSAFE_PICKLE,
        "unsafe-pickle",
        "A pickle references a global outside the state-dict allow-list, or uses opcodes a "
        "state dict never needs.",
        "Loading a pickle runs whatever it names: `os.system`, `builtins.eval`, `subprocess`. "
        "Denylists keep being bypassed, so only the globals a plain state dict needs (torch "
        "rebuild helpers, storage types, dtypes, OrderedDict) are accepted. Nothing is executed "
        "to find this out.",
        "GLOBAL 'posix system'",
        "GLOBAL 'torch._utils _rebuild_tensor_v2'",
        "Do not load the file. Save tensors with safetensors or a plain state_dict; allow an "
        "extra global only after reading what it does.",
    ),
    _rule(
        UNKNOWN_CHECKPOINT_FORMAT,
        "unknown-checkpoint-format",
        "A file named like a checkpoint (.pt, .pth, .ckpt) is neither a torch zip nor a pickle.",
        "A git-lfs pointer, an HTML error page or an empty file saved under a checkpoint's name "
        "is the most common 'checkpoint' that fails to load after the box is gone.",
        "best.pt starts with 'version https://git-lfs'",
        "best.pt starts with PK\\x03\\x04",
        "Fetch the real file (git lfs pull, re-download) and verify again.",
    ),
    _rule(
        NON_FINITE_TENSOR,
        "non-finite-tensor",
        "A floating-point tensor contains NaN or Inf values.",
        "A diverged run keeps saving checkpoints; loaders accept NaN weights without complaint. "
        "Finding it before teardown leaves the box available to resume from an earlier step.",
        "layers.3.weight (BF16): 12 NaN, 0 Inf",
        "every floating tensor is finite",
        "Resume from the last finite checkpoint, lower the learning rate or fix the loss.",
    ),
    _rule(
        FINITE_SCAN_SKIPPED,
        "finite-scan-skipped",
        "The NaN/Inf scan could not run for a file (numpy missing, big-endian data).",
        "An unscanned checkpoint may be non-finite; the digest still proves it is intact.",
        "numpy is not installed",
        "pip install numpy",
        "Install numpy in the environment that runs rentcheck.",
        Severity.WARNING,
    ),
    _rule(
        METRICS_UNPARSABLE,
        "metrics-unparsable",
        "A .json or .yaml file in the pull does not parse.",
        "A metrics file that was cut short or never finished writing is the evidence the run is "
        "judged by; an unparsable one is as good as missing.",
        'metrics.json: {"loss": 0.31',
        '{"loss": 0.31}',
        "Re-pull the file or re-run the evaluation that writes it.",
    ),
    _rule(
        DEEP_LOAD_FAILED,
        "deep-load-failed",
        "With --deep, torch.load(weights_only=True) or safetensors.safe_open failed.",
        "Structure and safety checks passed, but the reference loader still refused the file "
        "(unsupported pickle protocol, dtype unknown to this torch).",
        "torch.load: Unsupported operand 149",
        "torch.load(..., weights_only=True) succeeds",
        "Re-save with a plain torch.save(state_dict) (protocol 2) or with safetensors.",
    ),
    _rule(
        FILE_UNREADABLE,
        "file-unreadable",
        "A pulled file could not be read, or changed while it was being verified.",
        "A file that cannot be read cannot be verified; one that changes during the read is "
        "still being written by something.",
        "best.pt: Permission denied",
        "best.pt readable and unchanged",
        "Fix permissions or wait for the writer, then rerun.",
    ),
    _rule(
        VERIFIED_MARKER_STALE,
        "verified-marker-stale",
        "A file recorded in PULL_VERIFIED.json is gone or changed since it was verified.",
        "The marker certifies bytes, not names: a checkpoint deleted or rewritten after "
        "verification is no longer covered, and teardown would destroy the only good copy.",
        "best.pt: size 1073741824 in the marker, 0 now",
        "every marker file unchanged",
        "Verify again (`rentcheck verify LOCAL_ROOT`) before teardown.",
    ),
)

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in PULL_RULES}

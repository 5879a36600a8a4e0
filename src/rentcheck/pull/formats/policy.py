"""How a pull is judged beyond the built-in allow-list: presets, per-file policies, NaN/Inf by path.

* **Presets** add exactly the globals a framework writes and then loads with
  ``weights_only=True`` (the lists its own loader passes to ``torch.serialization.safe_globals``),
  and the per-file policies for the files it writes as full pickles.
* **Per-file policies** (by glob, matched like ``per-file-ignores``) add globals for matching
  files only, or mark a file as a *known full pickle* (HF's ``training_args.bin``): scanned like
  any pickle, the globals its policy names reported as one note instead of as hostile, never
  allow-listed for any other file.
* **NaN/Inf by tensor path**: model parameters and optimizer state fail; callback and loop
  scalars (Lightning's ``ModelCheckpoint.kth_value`` and ``EarlyStopping.best_score`` start at
  +-inf by design) are a note.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rentcheck.pathmatch import matcher, matches_any

__all__ = [
    "DEFAULT_NONFINITE_PATHS",
    "NONFINITE_ACTIONS",
    "OMEGACONF",
    "PRESETS",
    "FilePolicy",
    "Preset",
    "VerifyPolicy",
    "accept_hint",
]

NONFINITE_ACTIONS = ("fail", "note")

#: numpy's RNG state as torch.save writes it (``np.random.get_state()``): what transformers'
#: ``safe_globals()`` and accelerate's ``TORCH_SAFE_GLOBALS`` allow when they load it back.
NUMPY_RNG: tuple[str, ...] = (
    "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray._reconstruct",
    "numpy.ndarray",
    "numpy.dtype",
    "numpy.dtypes.UInt32DType",
)

#: What transformers 4.x/5.x pickle into ``training_args.bin`` (``torch.save(self.args)``).
HF_TRAINING_ARGS: tuple[str, ...] = (
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    "transformers.training_args.OptimizerNames",
    "transformers.trainer_utils.IntervalStrategy",
    "transformers.trainer_utils.SaveStrategy",
    "transformers.trainer_utils.HubStrategy",
    "transformers.trainer_utils.SchedulerType",
    "transformers.trainer_utils.FSDPOption",
    "transformers.debug_utils.DebugOption",
    "transformers.trainer_pt_utils.AcceleratorConfig",
    "accelerate.state.PartialState",
    "accelerate.utils.dataclasses.DistributedType",
    "torch.device",
)


#: What torch.distributed.checkpoint pickles into ``.metadata`` (read back by a plain
#: ``pickle.load`` in ``FileSystemReader.read_metadata``): its own dataclasses and a path.
DCP_METADATA: tuple[str, ...] = (
    *(
        f"torch.distributed.checkpoint.metadata.{name}"
        for name in (
            "Metadata",
            "TensorStorageMetadata",
            "BytesStorageMetadata",
            "ChunkStorageMetadata",
            "TensorProperties",
            "MetadataIndex",
            "StorageMeta",
            "_MEM_FORMAT_ENCODING",
        )
    ),
    "torch.distributed.checkpoint.filesystem._StorageInfo",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "pathlib.WindowsPath",
    "pathlib.PureWindowsPath",
)


#: What a real omegaconf ``DictConfig``/``ListConfig`` pickles (Hydra configs, Lightning
#: ``save_hyperparameters`` of a DictConfig), read from ``torch.save`` of real configs with
#: omegaconf 2.4 (plain values, lists, interpolations, structured configs): the containers,
#: their metadata, the value nodes, and the types its metadata names (``typing.Any``,
#: ``defaultdict(dict)`` as resolver cache, the element/key types). A structured config's own
#: dataclass is the user's and is not here: add it with ``allow_globals``.
OMEGACONF: tuple[str, ...] = (
    "omegaconf.dictconfig.DictConfig",
    "omegaconf.listconfig.ListConfig",
    "omegaconf.base.ContainerMetadata",
    "omegaconf.base.Metadata",
    "omegaconf.nodes.AnyNode",
    "omegaconf.nodes.StringNode",
    "omegaconf.nodes.IntegerNode",
    "omegaconf.nodes.FloatNode",
    "omegaconf.nodes.BooleanNode",
    "omegaconf.nodes.BytesNode",
    "omegaconf.nodes.PathNode",
    "typing.Any",
    "collections.defaultdict",
    "builtins.dict",
    "builtins.list",
    "builtins.int",
    "builtins.float",
    "builtins.str",
    "builtins.bool",
    "builtins.bytes",
)


@dataclass(frozen=True)
class FilePolicy:
    """A policy for the files matching ``glob``."""

    glob: str
    allow_globals: tuple[str, ...] = ()
    full_pickle: bool = False  # a known full pickle: its (allowed) globals are one note


@dataclass(frozen=True)
class Preset:
    name: str
    why: str
    allow_globals: tuple[str, ...] = ()
    files: tuple[FilePolicy, ...] = ()


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("numpy-rng", "numpy RNG state (np.random.get_state()) in a checkpoint", NUMPY_RNG),
        Preset(
            "hf-trainer",
            "transformers Trainer checkpoints: rng_state.pth holds numpy RNG state, "
            "training_args.bin is a full pickle of TrainingArguments",
            NUMPY_RNG,
            (FilePolicy("training_args.bin", HF_TRAINING_ARGS, full_pickle=True),),
        ),
        Preset(
            "accelerate",
            "accelerate save_state: random_states_*.pkl holds numpy RNG state",
            NUMPY_RNG,
        ),
        Preset(
            "lightning",
            "Lightning checkpoints whose hyper_parameters are an argparse Namespace or "
            "Lightning's AttributeDict (LightningCLI, save_hyperparameters(namespace))",
            ("argparse.Namespace", "lightning.fabric.utilities.data.AttributeDict"),
        ),
        Preset(
            "omegaconf",
            "checkpoints holding an OmegaConf/Hydra DictConfig or ListConfig (Lightning "
            "hyper_parameters of a Hydra run): the classes a real config pickles",
            OMEGACONF,
        ),
    )
}

#: Built in, whatever the configuration: DCP's ``.metadata`` is DCP's pickle, read by DCP.
BUILTIN_FILES: tuple[FilePolicy, ...] = (FilePolicy(".metadata", DCP_METADATA),)

#: (tensor path glob, action), first match wins; user entries go before these.
DEFAULT_NONFINITE_PATHS: tuple[tuple[str, str], ...] = (
    ("callbacks.*", "note"),
    ("loops.*", "note"),
)


@dataclass(frozen=True)
class VerifyPolicy:
    """The allow-list and NaN/Inf policy of one verify run, resolved per file."""

    allow_globals: tuple[str, ...] = ()
    files: tuple[FilePolicy, ...] = BUILTIN_FILES
    nonfinite_paths: tuple[tuple[str, str], ...] = DEFAULT_NONFINITE_PATHS

    @classmethod
    def build(
        cls,
        *,
        allow_globals: Iterable[str] = (),
        presets: Iterable[str] = (),
        files: Iterable[FilePolicy] = (),
        nonfinite_paths: Mapping[str, str] | None = None,
    ) -> VerifyPolicy:
        allowed, policies = list(allow_globals), [*BUILTIN_FILES, *files]
        for name in presets:
            preset = PRESETS[name]
            allowed += preset.allow_globals
            policies += preset.files
        paths = tuple((nonfinite_paths or {}).items()) + DEFAULT_NONFINITE_PATHS
        return cls(tuple(dict.fromkeys(allowed)), tuple(policies), paths)

    @functools.cached_property
    def _any_file_policy(self) -> Callable[[str], bool]:
        return matcher(tuple(policy.glob for policy in self.files))

    def for_file(self, rel: str) -> tuple[tuple[str, ...], bool]:
        """(the globals allowed in ``rel``, whether it is a known full pickle)."""
        if not self._any_file_policy(rel):  # most files: one match against every glob at once
            return self.allow_globals, False
        extra: list[str] = []
        full = False
        for policy in self.files:
            if matches_any(rel, (policy.glob,)):
                extra += policy.allow_globals
                full = full or policy.full_pickle
        if not extra:
            return self.allow_globals, full
        return tuple(dict.fromkeys((*self.allow_globals, *extra))), full

    def nonfinite_action(self, tensor: str) -> str:
        """``fail`` or ``note`` for a non-finite tensor at ``tensor`` (a dotted path)."""
        for glob, action in self.nonfinite_paths:
            if fnmatch.fnmatchcase(tensor, glob):
                return action
        return "fail"


def accept_hint(name: str) -> str:
    """How a refusal of the global ``name`` is accepted on purpose: the preset that lists it,
    else ``--allow-global`` (or the config key) after reading what it does."""
    presets = [p.name for p in PRESETS.values() if name in p.allow_globals]
    if presets:
        first = presets[0]
        return f'accepted by the preset {first!r}: presets = ["{first}"] in [tool.rentcheck.verify]'
    return (
        f"to accept it after reading what it does: --allow-global {name} "
        f'(or allow_globals = ["{name}"] in [tool.rentcheck.verify], or a file_policies entry)'
    )

"""Durable checkpoint files: atomic writes, newest-valid discovery, retention.

A checkpoint is one file `ckpt-<step>.pt`. It only ever appears under that name once its bytes
are on disk (temp file in the same directory, fsync, rename, fsync of the directory), so a
process killed at any instant leaves either the old set of checkpoints or the new one, plus at
most a stale `.ckpt-<step>.pt.tmp-<pid>` that loaders ignore.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

FORMAT = "tinytrain-checkpoint/1"
REQUIRED_KEYS = frozenset(
    {"format", "step", "run", "model", "optimizer", "scheduler", "position", "rng"}
)

_CKPT_NAME = re.compile(r"^ckpt-(\d{6,})\.pt$")
_TMP_NAME = re.compile(r"^\.ckpt-\d{6,}\.pt\.tmp-(\d+)$")


@dataclass(frozen=True)
class LoadedCheckpoint:
    path: Path
    step: int
    payload: dict[str, Any]


def checkpoint_path(directory: Path, step: int) -> Path:
    return directory / f"ckpt-{step:06d}.pt"


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """Final-named checkpoints sorted by step, oldest first; temp files never match."""
    found = []
    for entry in directory.iterdir():
        match = _CKPT_NAME.match(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; without it a power loss can forget the new name.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_atomic(payload: Mapping[str, Any], directory: Path, step: int) -> Path:
    final = checkpoint_path(directory, step)
    # Same directory as the final name: os.replace is only atomic within one filesystem.
    temp = directory / f".{final.name}.tmp-{os.getpid()}"
    try:
        with open(temp, "wb") as handle:
            torch.save(dict(payload), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    return final


def prune(directory: Path, keep_last: int, current_step: int) -> list[Path]:
    """Delete all but the newest `keep_last` checkpoints at or before `current_step`.

    Call only after the newest checkpoint is durable. Files with a larger step are left alone:
    they exist only if they failed to load at startup, and are kept as evidence.
    """
    timeline = [path for step, path in list_checkpoints(directory) if step <= current_step]
    doomed = timeline[:-keep_last] if keep_last > 0 else []
    for path in doomed:
        path.unlink(missing_ok=True)
    return doomed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp_files(directory: Path) -> list[Path]:
    """Remove temp files left by writers that were killed mid-save.

    A temp file whose writer is still alive is left alone, in case two processes share the
    directory (unsupported, but deleting a live writer's file would turn that into a crash).
    """
    removed = []
    for entry in directory.iterdir():
        match = _TMP_NAME.match(entry.name)
        if match and not _pid_alive(int(match.group(1))):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def _validate(payload: object, step: int) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ValueError(f"payload is {type(payload).__name__}, not dict")
    missing = REQUIRED_KEYS - payload.keys()
    if missing:
        raise ValueError(f"missing keys {sorted(missing)}")
    if payload["format"] != FORMAT:
        raise ValueError(f"format {payload['format']!r}, expected {FORMAT!r}")
    if not isinstance(payload["run"], dict):
        raise ValueError(f"run fingerprint is {type(payload['run']).__name__}, not dict")
    if payload["step"] != step:
        raise ValueError(f"file name says step {step} but payload says {payload['step']!r}")
    return payload


def load_newest_valid(directory: Path) -> LoadedCheckpoint | None:
    """Newest checkpoint that loads and validates; older ones are the fallback."""
    for step, path in reversed(list_checkpoints(directory)):
        try:
            payload = torch.load(path, weights_only=True, map_location="cpu")
            return LoadedCheckpoint(path=path, step=step, payload=_validate(payload, step))
        # A damaged file can fail in many layers (zip reader, unpickler, our own checks);
        # any of them means "not usable", and an older checkpoint is still a correct resume.
        except Exception as exc:  # noqa: BLE001
            reason = str(exc).splitlines()[0] if str(exc) else ""
            print(
                f"warning: ignoring unusable checkpoint {path}: {type(exc).__name__}: {reason}",
                file=sys.stderr,
                flush=True,
            )
    return None


def weights_sha256(state_dict: Mapping[str, Tensor]) -> str:
    """Digest of names, dtypes, shapes and raw bytes, in sorted name order."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to("cpu")
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        # clone() gives a compact storage holding exactly this tensor's elements.
        digest.update(bytes(tensor.contiguous().clone().untyped_storage()))
    return digest.hexdigest()

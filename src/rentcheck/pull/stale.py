"""Which local files a pull must fetch again whole: those no append can repair.

A resumed pull continues a shorter local file by appending. That repairs a partial copy,
never a file the box rewrote: the per-epoch ``last.ckpt`` saved again at the same size or
smaller (appending sends nothing, and verify fails every time), or saved larger over a copy
that was complete. Here a local file is stale when it is longer than the box's, as long with
another SHA-256, or a complete verified copy of an older version. Its content is known from
PULL_VERIFIED.json when the file is proved untouched since verify (``local_drift``), else it
is hashed here (local disk). Stale files are fetched whole to a temp name and renamed, so
the old copy stays until the new one is complete.
"""

from __future__ import annotations

import hashlib
import os
import stat

from rentcheck.errors import FormatError
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.manifest import Manifest

__all__ = ["stale_local_files"]


def _sha256(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None  # unreadable: not the box's content
    return digest.hexdigest()


def _verified_here(local_root: str) -> dict[str, str]:
    """path -> SHA-256 of the local files PULL_VERIFIED.json proves unchanged since verify."""
    from rentcheck.pull.local_proof import local_drift
    from rentcheck.pull.marker import load_verified_marker

    try:
        marker = load_verified_marker(os.path.join(local_root, builder.VERIFIED_NAME))
    except FormatError:
        return {}
    drifted = {f.path for f in local_drift(local_root, marker)}
    return {f.path: f.sha256 for f in marker.files if f.path not in drifted}


def stale_local_files(local_root: str, manifest: Manifest) -> set[str]:
    """Roster paths whose local file must be replaced whole (see the module docstring)."""
    known: dict[str, str] | None = None
    stale: set[str] = set()
    for entry in manifest.files:
        local = os.path.join(local_root, entry.path)
        try:
            st = os.lstat(local)
        except OSError:
            continue  # not here yet: fetched from the start anyway
        if not stat.S_ISREG(st.st_mode):
            continue  # unsafe_paths refuses it before the first byte
        if known is None:
            known = _verified_here(local_root)
        verified = known.get(entry.path)
        if st.st_size > entry.size:
            stale.add(entry.path)
        elif st.st_size == entry.size:
            have = verified if verified is not None else _sha256(local)
            if have != entry.sha256:
                stale.add(entry.path)
        elif verified is not None and verified != entry.sha256:
            stale.add(entry.path)  # a complete older version, not a partial copy
    return stale

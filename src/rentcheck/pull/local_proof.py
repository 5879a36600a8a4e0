"""Proof that a file is unchanged, from metadata that cannot be set back or from its bytes.

``utime`` sets mtime back; nothing but the clock sets ctime back. So a file whose size and
mtime match and whose ctime predates the moment its content was last read cannot have
changed since; any other file is hashed (here: local disk, cheap). Teardown uses this for the
local copy (``local_drift``) and, with the roster's build time, for the box; the pull uses
it to know which local files it must fetch again whole.
"""

from __future__ import annotations

import datetime
import os
import stat as stat_module
from typing import TYPE_CHECKING

from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.rules import RULES_BY_CODE, VERIFIED_MARKER_STALE

if TYPE_CHECKING:
    from rentcheck.model import Finding
    from rentcheck.pull.marker import VerifiedMarker

__all__ = ["CTIME_SLACK_NS", "epoch_ns", "local_drift", "sha256_of"]


# ctime is the kernel's, the roster's time the builder's clock truncated to seconds: a file
# whose ctime is within this of the roster's start is hashed, not trusted.
CTIME_SLACK_NS = 2_000_000_000


def epoch_ns(when: datetime.datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp()) * 1_000_000_000


def _since_verified(root: str, marker: VerifiedMarker) -> int | None:
    """A time no later than verify's first read (ns), or None: the local roster's ctime (the
    pull writes it after the transfer, before verify reads) and the marker's time, less the
    slack. A local file whose ctime is past it may have changed after it was read."""
    try:
        verified = datetime.datetime.fromisoformat(marker.verified_at)
        roster = os.stat(os.path.join(root, builder.MANIFEST_NAME)).st_ctime_ns
    except (OSError, ValueError):
        return None
    return min(roster, epoch_ns(verified)) - CTIME_SLACK_NS


def sha256_of(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def local_drift(root: str, marker: VerifiedMarker, *, rehash: bool = False) -> list[Finding]:
    """RC521 for every verified local file whose content is no longer proved: gone, not a
    regular file, another size, or hashed (its mtime or ctime moved, or ``rehash``) to
    another digest or unreadable. A copy with new mtimes and the same bytes (``cp -r``)
    passes; the same mtime over other bytes (``cp -p``, ``touch -r``) does not."""
    rule = RULES_BY_CODE[VERIFIED_MARKER_STALE]
    since = None if rehash else _since_verified(root, marker)
    out = []
    for f in marker.files:
        full = os.path.join(root, f.path)
        try:
            st = os.lstat(full)
        except OSError as exc:
            why = "gone since it was verified" if isinstance(exc, FileNotFoundError) else str(exc)
            out.append(rule.finding(why, path=f.path))
            continue
        if not stat_module.S_ISREG(st.st_mode):
            out.append(rule.finding("no longer a regular file since it was verified", path=f.path))
            continue
        if st.st_size != f.size:
            out.append(rule.finding("changed since it was verified", path=f.path))
            continue
        if since is not None and st.st_mtime_ns == f.mtime_ns and st.st_ctime_ns < since:
            continue  # untouched since before verify read it: proved by its metadata
        try:
            same = sha256_of(full) == f.sha256
        except OSError as exc:
            why = f"could not be read to prove it unchanged: {exc}"
            out.append(rule.finding(why, path=f.path))
            continue
        if not same:
            out.append(rule.finding("content changed since it was verified", path=f.path))
    return out

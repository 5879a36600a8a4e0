"""Write files the way rentcheck promises: temp beside the target, fsync, rename, fsync the dir."""

from __future__ import annotations

import contextlib
import os

__all__ = ["write_atomic"]


def write_atomic(path: str, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new file, whole.

    ``mode`` defaults to the existing file's permission bits (0o644 for a new file), so a fix
    never drops the executable bit.
    """
    import stat
    import tempfile

    try:
        existing = os.stat(path)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        # `-o /dev/null`, `-o /dev/stdout`, a FIFO: write into it. A rename would replace the
        # device itself (as root, /dev/null would become a regular file for every process).
        with open(path, "wb") as handle:
            handle.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    if mode is None:
        mode = existing.st_mode & 0o7777 if existing is not None else 0o644
    fd, tmp = tempfile.mkstemp(
        prefix=f".{os.path.basename(path)}.", suffix=".rentcheck-tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    # The rename is only durable once the directory entry is on disk; some filesystems refuse
    # fsync on a directory, which is not worth failing the write for.
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)

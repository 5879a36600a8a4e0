"""Build PULL_MANIFEST.json on the box: the exact roster of a result directory, hashed.

This one module is the whole remote side. It imports nothing but the standard library (blake3 is
used when importable), so it runs on a bare box as ``python3 -I -S manifest_builder.py ROOT`` or
sent over SSH on stdin (``python3 -I -S - ROOT < manifest_builder.py``). Keep it that way: no
rentcheck imports, no third-party imports at module level, syntax that Python 3.7 accepts
(checked with 3.7, 3.8 and 3.13).

Policy (the verifier imports the same functions, so both sides agree):

* every regular file under ROOT is listed with its POSIX path relative to ROOT (exactly as named
  on disk), size, ``mtime_ns`` and SHA-256 (and BLAKE3 when available);
* refused with exit 2: symlinks that resolve outside ROOT, dangling symlinks, symlinks to
  directories, devices/FIFOs/sockets, names that are not valid UTF-8 or contain a backslash or
  control character, and files that change while they are hashed;
* leftovers of unfinished writes (``*.tmp``, ``*.partial``, ``.tmpXXXXXX``, ``tmp-checkpoint-*``
  ...; see ``leftover_reason``) are recorded under ``leftovers`` with their size and NOT hashed;
  the build still succeeds (exit 0, with a warning) and the verifier reports each one as RC510;
* ``PULL_MANIFEST.json`` and ``PULL_VERIFIED.json`` at the top of ROOT are never listed;
* the output is written atomically (temp file in the same directory, fsync, rename, fsync dir).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import importlib
import json
import os
import re
import secrets
import socket
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SCHEMA = "rentcheck/manifest/v1"
MANIFEST_NAME = "PULL_MANIFEST.json"
VERIFIED_NAME = "PULL_VERIFIED.json"
RESERVED_NAMES = (MANIFEST_NAME, VERIFIED_NAME)
CHUNK = 4 * 1024 * 1024
LEFTOVER_SUFFIXES = (
    ".tmp",
    ".temp",
    ".part",
    ".partial",
    ".incomplete",
    ".crdownload",
    ".rentcheck-tmp",
)
_RUST_TEMPFILE = re.compile(r"\A\.tmp[A-Za-z0-9]{6}\Z")
_RUN_ID = re.compile(r"\A[^\x00-\x20\x7f/\\]{1,200}\Z")
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


class BuildError(Exception):
    """The manifest cannot be built; ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (fix: {self.hint})"


def leftover_reason(rel: str) -> str | None:
    """Why ``rel`` looks like the leftover of an unfinished write, or None."""
    for part in rel.split("/"):
        low = part.lower()
        for suffix in LEFTOVER_SUFFIXES:
            if low.endswith(suffix):
                return f"name ends with {suffix}"
        if ".tmp-" in low or ".tmp." in low:
            return "temporary name (.tmp-)"
        if _RUST_TEMPFILE.match(part):
            return "temporary file of an interrupted save (.tmpXXXXXX)"
        if low.startswith("tmp-checkpoint-"):
            return "unfinished Trainer checkpoint directory (tmp-checkpoint-*)"
        if part == ".rsync-partial":
            return "rsync partial directory"
    return None


def check_name(rel: str) -> None:
    """Refuse names the manifest cannot represent faithfully."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        raise BuildError(f"name {shown!r} is not valid UTF-8", "rename it") from None
    if _BAD_CHARS.search(rel):
        raise BuildError(f"name {rel!r} contains a backslash or control character", "rename it")


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def walk(root: str, exclude: tuple[str, ...] = ()) -> tuple[list[tuple[str, str]], list[str]]:
    """(rel path, path to read) of every file, and the rel paths of leftovers; sorted."""
    root_real = os.path.realpath(root)
    files: list[tuple[str, str]] = []
    leftovers: list[str] = []
    excluded = {os.path.realpath(p) for p in exclude}
    excluded_names = {os.path.basename(p) for p in excluded}
    stack = [""]
    while stack:
        prefix = stack.pop()
        with os.scandir(os.path.join(root, prefix) if prefix else root) as entries:
            for entry in entries:
                rel = prefix + entry.name
                check_name(rel)
                if not prefix and entry.name in RESERVED_NAMES:
                    continue
                if entry.name in excluded_names and os.path.realpath(entry.path) in excluded:
                    continue
                target = _classify(entry, rel, root_real)
                if target is None:
                    stack.append(rel + "/")
                elif leftover_reason(rel):
                    leftovers.append(rel)
                else:
                    files.append((rel, target))
    return sorted(files), sorted(leftovers)


def _classify(entry: os.DirEntry[str], rel: str, root_real: str) -> str | None:
    """The path to read for a file, or None for a directory to descend into."""
    if entry.is_symlink():
        real = os.path.realpath(entry.path)
        if not _inside(real, root_real):
            raise BuildError(
                f"symlink {rel!r} points outside ROOT to {real!r}",
                "copy the target into ROOT or delete the link",
            )
        try:
            st = os.stat(real)
        except OSError:
            raise BuildError(f"symlink {rel!r} is dangling", "delete the link") from None
        if stat.S_ISDIR(st.st_mode):
            raise BuildError(
                f"symlink {rel!r} points to a directory", "replace it with the directory itself"
            )
        if not stat.S_ISREG(st.st_mode):
            raise BuildError(f"symlink {rel!r} points to a special file", "delete the link")
        return real
    if entry.is_dir(follow_symlinks=False):
        return None
    if entry.is_file(follow_symlinks=False):
        return entry.path
    raise BuildError(
        f"{rel!r} is a device, FIFO or socket, not a regular file", "remove it from ROOT"
    )


def _blake3() -> Any:
    try:
        return importlib.import_module("blake3").blake3()
    except ImportError:
        return None


def hash_file(rel: str, path: str, with_blake3: bool = True) -> dict[str, Any]:
    """One roster entry; refuses a file that changes while it is read."""
    try:
        with open(path, "rb", buffering=0) as f:
            before = os.fstat(f.fileno())
            sha = hashlib.sha256()
            b3 = _blake3() if with_blake3 else None
            buf = bytearray(CHUNK)
            view = memoryview(buf)
            total = 0
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                sha.update(view[:n])
                if b3 is not None:
                    b3.update(view[:n])
                total += n
            after = os.fstat(f.fileno())
    except OSError as exc:
        raise BuildError(f"cannot read {rel!r}: {exc.strerror}", "fix its permissions") from None
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or (
        total != after.st_size
    ):
        raise BuildError(f"{rel!r} changed while it was hashed", "wait for the writer to finish")
    entry: dict[str, Any] = {
        "path": rel,
        "size": total,
        "mtime_ns": after.st_mtime_ns,
        "sha256": sha.hexdigest(),
    }
    if b3 is not None:
        entry["blake3"] = b3.hexdigest()
    return entry


def default_run_id() -> str:
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def build_manifest(
    root: str,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
    exclude: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The manifest as a JSON-ready dict. Raises BuildError for anything it refuses."""
    if not os.path.isdir(root):
        raise BuildError(f"ROOT {root!r} is not a directory", "pass the run's result directory")
    run_id = default_run_id() if run_id is None else run_id
    if not _RUN_ID.match(run_id):
        raise BuildError(
            f"run id {run_id!r} is empty, too long or has spaces, slashes or control characters",
            "use letters, digits and . _ - : only",
        )
    files, leftover_paths = walk(root, exclude)
    workers = max(1, jobs or min(8, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        entries = list(pool.map(lambda ft: hash_file(ft[0], ft[1], with_blake3), files))
    leftovers = []
    for rel in leftover_paths:
        st = os.lstat(os.path.join(root, rel))
        leftovers.append({"path": rel, "size": st.st_size, "reason": leftover_reason(rel)})
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "tool": "rentcheck-manifest-builder/1 python/{}.{}".format(*sys.version_info[:2]),
        "files": entries,
        "leftovers": leftovers,
        "totals": {"files": len(entries), "bytes": sum(e["size"] for e in entries)},
    }


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(
        directory,
        f".{os.path.basename(path)}.tmp-{os.getpid()}-{secrets.token_hex(4)}",
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def dumps(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def check_output(root: str, output: str) -> None:
    """Refuse an output path inside ROOT other than ROOT/PULL_MANIFEST.json."""
    root_real, out_real = os.path.realpath(root), os.path.realpath(output)
    if _inside(out_real, root_real) and out_real != os.path.join(root_real, MANIFEST_NAME):
        raise BuildError(
            f"output {output!r} is inside ROOT but is not ROOT/{MANIFEST_NAME}",
            "omit -o, or write the manifest outside ROOT",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rentcheck manifest build", description="Write PULL_MANIFEST.json for ROOT."
    )
    parser.add_argument("root", metavar="ROOT")
    parser.add_argument("-o", "--output", help=f"default: ROOT/{MANIFEST_NAME}")
    parser.add_argument("--run-id", help="default: <UTC time>-<random>")
    parser.add_argument("--jobs", type=int, default=None, help="files hashed at once")
    parser.add_argument("--no-blake3", action="store_true", help="SHA-256 only")
    args = parser.parse_args(argv)
    output = args.output or os.path.join(args.root, MANIFEST_NAME)
    try:
        check_output(args.root, output)
        manifest = build_manifest(
            args.root, args.run_id, args.jobs, not args.no_blake3, exclude=(output,)
        )
        atomic_write_bytes(output, dumps(manifest))
    except BuildError as exc:
        print(f"rentcheck: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"rentcheck: error: {exc} (fix: check ROOT and the output path)", file=sys.stderr)
        return 2
    totals = manifest["totals"]
    print(f"rentcheck: wrote {output} ({totals['files']} files, {totals['bytes']} bytes)")
    for item in manifest["leftovers"]:
        print(
            f"rentcheck: warning: leftover {item['path']!r} recorded, not hashed: {item['reason']}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The roster's answer on the box: one request (build the roster, stat the tree, hash named
files) answered as one JSON head line, then the payload compressed with zlib.

Sent on stdin (``python3 -I -S -``) by ``rentcheck.pull.remote_roster`` after two lines it
prepends: ``BUILDER_SOURCE`` (the source of ``manifest_builder.py``, exec'd as a module of
its own name so its ``__main__`` block stays off) and ``REQUEST`` (the request as JSON text).
Standard library only, Python 3.7+.

Both the manifest and the stat rows are written as the tree is walked, through one
compressor: at most ``inline_max`` compressed bytes are held; beyond that they go to a temp
file (``rentcheck-answer-*``) that the client reads back in pieces and deletes. Memory does
not grow with the file count. The head carries the program's own peak RSS (getrusage).
"""

# No ``from __future__`` import: remote_program prepends two lines to this source, so the
# annotations are spelled for Python 3.7 itself (typing's names).
import json
import os
import shutil
import sys
import zlib
from typing import Any, Dict, List, Optional

LINE_ROWS_BYTES = 64 << 10  # a stat answer's line: rows of about this many bytes


class Answer:
    """The payload, compressed as it is made: held up to ``inline_max`` bytes, then spooled
    to a temp file the client reads in pieces."""

    def __init__(self, out: Any, inline_max: int) -> None:
        self.out = out
        self.inline_max = inline_max
        self.comp = zlib.compressobj(1)
        self.held: List[bytes] = []
        self.size = 0
        self.spool: Optional[str] = None
        self.file: Any = None

    def write(self, data: bytes) -> None:
        self._put(self.comp.compress(data))

    def _put(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self.file is None and self.size > self.inline_max:
            import tempfile

            fd, self.spool = tempfile.mkstemp(prefix="rentcheck-answer-")
            self.file = os.fdopen(fd, "wb")
            self.file.write(b"".join(self.held))
            self.held = []
        if self.file is not None:
            self.file.write(data)
        else:
            self.held.append(data)

    def send(self, head: Dict[str, Any]) -> None:
        self._put(self.comp.flush())
        head = dict(head, peak_rss_kib=peak_rss_kib())
        if self.file is not None:
            self.file.close()
            head.update(spool=self.spool, spool_bytes=self.size)
        self.out.write(json.dumps(head).encode() + b"\n" + b"".join(self.held))
        self.out.flush()

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
            os.unlink(str(self.spool))
            self.file = None


def peak_rss_kib() -> Optional[int]:
    """This program's own peak RSS in KiB (Linux's ru_maxrss), or None where unknown."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except Exception:  # noqa: BLE001 - a number we report, never a reason to fail
        return None


def stat_rows(b: Any, root: str, answer: Answer) -> None:
    """Every file's [path, size, mtime_ns, ctime_ns, inode], then every leftover's [path,
    size, mtime_ns]: one JSON list of rows a line, a line about every 64 KB."""
    left: List[List[Any]] = []
    batch: List[List[Any]] = []
    size = 0
    for rel, path in b.iter_tree(root):
        if path is None:
            st = os.lstat(os.path.join(root, rel))
            left.append([rel, st.st_size, st.st_mtime_ns])
            continue
        st = os.stat(path)
        batch.append([rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        size += len(rel) + 60
        if size >= LINE_ROWS_BYTES:
            answer.write((json.dumps(batch, ensure_ascii=False) + "\n").encode())
            batch, size = [], 0
    for rows in (batch, left):
        if rows:
            answer.write((json.dumps(rows, ensure_ascii=False) + "\n").encode())


def roster(b: Any, root: str, request: Dict[str, Any], answer: Answer) -> None:
    """The manifest's bytes, a piece at a time as the walk hashes; also written to
    ROOT/PULL_MANIFEST.json (atomically) when the request asks."""
    run_id = request.get("run_id")
    if not request.get("write"):
        for piece in b.manifest_pieces(root, run_id, None, False):
            answer.write(piece)
        return
    target = os.path.join(root, b.MANIFEST_NAME)
    keep = b.AtomicFile(target)
    pieces = b.manifest_pieces(root, run_id, None, False, exclude=(target, keep.tmp))
    with keep:
        for piece in pieces:
            keep.write(piece)
            answer.write(piece)


def hashes(b: Any, root: str, request: Dict[str, Any], answer: Answer) -> None:
    """Roster entries of the named files, and which are missing, still being written or
    unreadable (never counted unchanged by the caller)."""
    found: List[Dict[str, Any]] = []
    missing: List[str] = []
    unstable: List[str] = []
    unreadable: Dict[str, str] = {}
    for rel in request["paths"]:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            missing.append(rel)
            continue
        try:
            found.append(b.hash_file(rel, os.path.realpath(path), False))
        except b.BuildError:  # it changed while it was read: still being written
            unstable.append(rel)
        except FileNotFoundError:  # gone between the check and the open
            missing.append(rel)
        except OSError as exc:  # unreadable: the caller must not count it unchanged
            unreadable[rel] = str(exc)
    doc = {"files": found, "missing": missing, "unstable": unstable, "unreadable": unreadable}
    answer.write(json.dumps(doc).encode())


def main(builder_source: str, request_text: str) -> int:
    namespace: Dict[str, Any] = {"__name__": "rentcheck_manifest_builder"}
    exec(compile(builder_source, "manifest_builder.py", "exec"), namespace)  # noqa: S102
    b: Any = type("builder", (), namespace)
    request = json.loads(request_text)
    root = request["root"]
    out = sys.stdout.buffer
    inline_max = int(request.get("inline_max", 4 << 20))
    answer = Answer(out, inline_max)
    try:
        if not os.path.isdir(root):
            raise b.BuildError(
                f"{root!r} is not a directory on the box",
                "pass the run's result directory as HOST:REMOTE_ROOT",
            )
        head = {
            "ok": True,
            "root": os.path.realpath(root),
            "rsync": shutil.which("rsync") is not None,
            "python": "{}.{}".format(*sys.version_info[:2]),
        }
        mode = request["mode"]
        if mode == "roster":
            roster(b, root, request, answer)
        elif mode == "stat":
            stat_rows(b, root, answer)
        else:
            hashes(b, root, request, answer)
        answer.send(head)
    except b.BuildError as exc:
        answer.discard()
        Answer(out, inline_max).send({"ok": False, "error": exc.message, "hint": exc.hint})
        return 2
    except OSError as exc:
        answer.discard()
        hint = "check REMOTE_ROOT and its permissions"
        Answer(out, inline_max).send({"ok": False, "error": str(exc), "hint": hint})
        return 2
    return 0


if __name__ == "__main__":
    # remote_program prepends both names to this source
    sys.exit(main(BUILDER_SOURCE, REQUEST))  # type: ignore[name-defined] # noqa: F821

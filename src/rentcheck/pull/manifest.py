"""Load and validate PULL_MANIFEST.json. The input is treated as hostile.

Path rules (the same on every platform):

* a path is the file's POSIX path relative to the root, exactly as the builder saw it: no leading
  ``/`` or drive letter, no backslash, NUL or control character, no empty, ``.`` or ``..``
  component, at most 4096 characters and 255 UTF-8 bytes per component;
* paths are compared after Unicode NFC normalisation (macOS may store names decomposed), so two
  entries equal after NFC are duplicates and the manifest is rejected; case is significant;
* a path that is also a directory of another entry (``a`` and ``a/b``) is rejected;
* ``PULL_MANIFEST.json`` and ``PULL_VERIFIED.json`` at the top level are reserved.

The JSON is read in chunks and parsed one top-level value and one roster entry at a time (each
capped at ``MAX_VALUE_CHARS``), with a hook that validates every object as soon as it is
complete and rejects any shape the schema does not have. The roster is held in columns (a path
string, 32-byte digests and 64-bit integers per entry, about 200 bytes each), not as objects:
a 1,000,000-file manifest loads in well under 300 MB, whatever the file contains.
"""

from __future__ import annotations

import bisect
import codecs
import datetime
import hashlib
import io
import json
import os
import re
import unicodedata
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, overload

from rentcheck.errors import FormatError, UsageError
from rentcheck.model import Finding
from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.nogc import collector_paused
from rentcheck.pull.rules import MANIFEST_INVALID, RULES_BY_CODE

__all__ = [
    "MAX_MANIFEST_BYTES",
    "SCHEMA",
    "Leftover",
    "Manifest",
    "ManifestEntry",
    "Roster",
    "build_manifest_file",
    "check_manifest",
    "load_manifest",
    "normalize_path",
    "parse_manifest",
    "position",
    "read_manifest",
    "read_roster_document",
    "validate_rel_path",
]

SCHEMA = builder.SCHEMA
MAX_MANIFEST_BYTES = 1 << 30  # about 3,500,000 files with BLAKE3 digests
MAX_VALUE_CHARS = 1 << 20  # one roster entry or top-level value, as JSON text
_READ = 1 << 20
_AHEAD = 64 * 1024  # characters kept buffered ahead while reading a roster
_HEX64 = re.compile(r"\A[0-9a-fA-F]{64}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")
_WS = re.compile(r"[ \t\n\r]*")
_INT64 = 1 << 63
_FILE_KEYS = frozenset({"path", "size", "mtime_ns", "sha256", "blake3"})
_LEFT_KEYS = frozenset({"path", "size", "reason"})
_TOTAL_KEYS = frozenset({"files", "bytes"})
_TOP_KEYS = frozenset(
    {"schema", "run_id", "created_at", "host", "tool", "files", "leftovers", "totals"}
)
_REQUIRED_TOP = ("schema", "run_id", "created_at", "host", "files")


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    blake3: str | None = None


_Row = tuple[str, int, int, str, "str | None"]  # a roster entry as the parser makes it
_NO_B3 = bytes(32)


@dataclass(frozen=True)
class Leftover:
    path: str
    size: int
    reason: str


@dataclass(frozen=True)
class _Totals:
    files: int
    bytes: int


class Roster(Sequence[ManifestEntry]):
    """The manifest's files, in manifest order, held in columns: per entry a path string, a
    32-byte SHA-256 (and BLAKE3) digest and two 64-bit integers, about 150 bytes, against
    about 700 for a ManifestEntry object. Entries are made on access."""

    def __init__(self) -> None:
        self._paths: list[str] = []
        self._sha = bytearray()
        self._b3 = bytearray()  # 32 zero bytes where _has_b3 is 0, up to the last that is 1
        self._has_b3 = bytearray()
        self._size = array("q")
        self._mtime = array("q")
        self._sorted_nfc = True  # paths strictly increasing and NFC: bisect finds them
        self._index: dict[str, int] | None = None  # NFC path -> position, when not sorted

    def append(self, e: ManifestEntry) -> None:
        self.add((e.path, e.size, e.mtime_ns, e.sha256, e.blake3))

    def add(self, row: _Row) -> None:
        """Append an entry given as (path, size, mtime_ns, sha256, blake3): no object made."""
        path, size, mtime_ns, sha256, blake3 = row
        paths = self._paths
        if self._sorted_nfc and (
            (paths and path <= paths[-1])
            or not (path.isascii() or unicodedata.is_normalized("NFC", path))
        ):
            self._sorted_nfc = False
        paths.append(path)
        self._sha += bytes.fromhex(sha256)
        if blake3 is not None:
            # Grown only once some entry has one: a SHA-256-only roster (the box's) pays
            # nothing for the column.
            self._b3 += _NO_B3 * (len(paths) - 1 - len(self._b3) // 32)
            self._b3 += bytes.fromhex(blake3)
        self._has_b3.append(blake3 is not None)
        self._size.append(size)
        self._mtime.append(mtime_ns)

    def __len__(self) -> int:
        return len(self._paths)

    def entry(self, i: int) -> ManifestEntry:
        """Entry ``i`` (0 <= i < len): ``self[i]`` without the slice and bounds handling."""
        return self._entry(i)

    def _entry(self, i: int) -> ManifestEntry:
        b3 = self._b3[32 * i : 32 * i + 32].hex() if self._has_b3[i] else None
        sha = self._sha[32 * i : 32 * i + 32].hex()
        return ManifestEntry(self._paths[i], self._size[i], self._mtime[i], sha, b3)

    @overload
    def __getitem__(self, i: int) -> ManifestEntry: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[ManifestEntry, ...]: ...

    def __getitem__(self, i: int | slice) -> ManifestEntry | tuple[ManifestEntry, ...]:
        if isinstance(i, slice):
            return tuple(self._entry(k) for k in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("roster index out of range")
        return self._entry(i)

    def __iter__(self) -> Iterator[ManifestEntry]:
        return (self._entry(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Roster({len(self)} files)"

    @property
    def paths(self) -> Sequence[str]:
        return self._paths

    @property
    def sizes(self) -> Sequence[int]:
        return self._size

    @property
    def mtimes(self) -> Sequence[int]:
        return self._mtime

    @property
    def is_sorted(self) -> bool:
        """Paths strictly increasing and NFC (as the builder writes them)."""
        return self._sorted_nfc

    @property
    def sha256_column(self) -> bytes | bytearray:
        """Every entry's SHA-256, 32 bytes each, in roster order (do not modify)."""
        return self._sha

    def describes(self, i: int, path: str, size: int, sha256: bytes) -> bool:
        """Entry ``i`` has exactly this path, size and (raw) SHA-256: no entry is made."""
        return (
            self._paths[i] == path
            and self._size[i] == size
            and self._sha[32 * i : 32 * i + 32] == sha256
        )

    @property
    def total_bytes(self) -> int:
        return sum(self._size)

    def find(self, key: str) -> int | None:
        """The position of the entry whose NFC-normalised path is ``key``, or None."""
        if self._sorted_nfc:
            i = bisect.bisect_left(self._paths, key)
            return i if i < len(self._paths) and self._paths[i] == key else None
        if self._index is None:
            self._index = {normalize_path(p): i for i, p in enumerate(self._paths)}
        return self._index.get(key)

    def __contains__(self, entry: object) -> bool:
        if not isinstance(entry, ManifestEntry):
            return False
        i = self.find(normalize_path(entry.path))
        return i is not None and self._entry(i) == entry


@dataclass(frozen=True)
class Manifest:
    run_id: str
    created_at: datetime.datetime
    host: str
    files: Roster
    leftovers: tuple[Leftover, ...]
    sha256: str  # of the manifest's bytes, for PULL_VERIFIED.json
    tool: str | None = None
    schema: str = SCHEMA

    def by_path(self) -> dict[str, ManifestEntry]:
        """Entries keyed by NFC-normalised path (every entry made: for small manifests; the
        verifier looks entries up with ``files.find`` instead)."""
        return {normalize_path(e.path): e for e in self.files}

    @property
    def total_bytes(self) -> int:
        return self.files.total_bytes


def normalize_path(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def validate_rel_path(path: object, what: str = "path") -> str:
    """``path`` if it is a safe relative POSIX path, else FormatError naming the problem."""
    if not isinstance(path, str) or not path:
        raise FormatError(f"{what}: must be a non-empty string")
    shown = path if len(path) <= 200 else path[:200] + "..."
    if len(path) > 4096:
        raise FormatError(f"{what} {shown!r}: longer than 4096 characters")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FormatError(f"{what} {shown!r}: not valid UTF-8 (lone surrogate)") from None
    if _CONTROL.search(path):
        raise FormatError(f"{what} {shown!r}: contains a backslash or control character")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        raise FormatError(f"{what} {shown!r}: absolute paths are not allowed")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            name = {"": "empty", ".": "'.'", "..": "'..'"}[part]
            raise FormatError(f"{what} {shown!r}: {name} component not allowed")
        if len(part.encode("utf-8")) > 255:
            raise FormatError(f"{what} {shown!r}: a component is longer than 255 bytes")
    if path in builder.RESERVED_NAMES:
        raise FormatError(f"{what} {shown!r}: reserved name")
    return path


def _int(value: object, what: str, *, signed: bool = False) -> int:
    if type(value) is not int or (value < 0 and not signed):  # bool is not an int here
        kind = "an integer" if signed else "a non-negative integer"
        raise FormatError(f"{what}: {value!r} is not {kind}")
    if not -_INT64 <= value < _INT64:
        raise FormatError(f"{what}: {value} does not fit in 64 bits")
    return value


def _digest(value: object, what: str) -> str:
    if not isinstance(value, str) or not _HEX64.match(value):
        raise FormatError(f"{what}: must be 64 hexadecimal characters")
    return value.lower()


class _Hook:
    """``object_pairs_hook``: validate each JSON object as soon as it is parsed.

    Returns compact typed values and refuses every shape the schema does not have (including a
    second top-level-like object), so nothing cheap to write can be expensive to hold.
    """

    def __init__(self) -> None:
        self.tops = 1  # the top-level object itself is read by _Parser, not by this hook

    def __call__(self, pairs: list[tuple[str, Any]]) -> object:
        obj = dict(pairs)
        if not obj:
            raise FormatError("empty object where the schema has none")
        if len(obj) != len(pairs):
            raise FormatError(f"duplicate key in object with keys {sorted(obj)[:8]}")
        keys = obj.keys()
        if "path" in obj and "sha256" in obj and keys <= _FILE_KEYS:
            return _file_entry(obj)
        if keys == _LEFT_KEYS:
            path = validate_rel_path(obj["path"], "leftover")
            if not isinstance(obj["reason"], str):
                raise FormatError(f"leftover {path!r}: reason must be a string")
            return Leftover(path, _int(obj["size"], f"leftover {path!r}: size"), obj["reason"])
        if keys == _TOTAL_KEYS:
            return _Totals(_int(obj["files"], "totals.files"), _int(obj["bytes"], "totals.bytes"))
        if keys <= _TOP_KEYS:
            self.tops += 1
            if self.tops > 1:
                raise FormatError("more than one top-level object")
            return obj
        unknown = sorted(keys - _TOP_KEYS - _FILE_KEYS - _LEFT_KEYS)
        raise FormatError(f"unexpected object with keys {unknown[:8] or sorted(keys)[:8]}")


#: A path every rule accepts, checked in one match (the rules: ``validate_rel_path``). Other
#: paths, non-ASCII ones included, go through the rules one by one.
_PLAIN_PATH = re.compile(
    r"(?!(?:PULL_MANIFEST|PULL_VERIFIED)\.json\Z)"
    r"(?!\.\.?(?:/|\Z))[\w.+@=,~-]{1,255}(?:/(?!\.\.?(?:/|\Z))[\w.+@=,~-]{1,255})*\Z",
    re.ASCII,
)


#: One roster entry exactly as the builder writes it (sorted keys, indented, no escapes in the
#: path): what ``json`` would parse to a dict the hook accepts, read without making the dict.
#: Anything else (other key order, escapes, other number forms) takes the general path.
_JWS = r"[ \t\n\r]*"
_BUILDER_ENTRY = re.compile(
    rf'\{{{_JWS}(?:"blake3":{_JWS}"([0-9a-fA-F]{{64}})",{_JWS})?'
    rf'"mtime_ns":{_JWS}(-?(?:0|[1-9][0-9]{{0,18}})),{_JWS}'
    rf'"path":{_JWS}"([\w.+@=,~/-]{{1,4096}})",{_JWS}'
    rf'"sha256":{_JWS}"([0-9a-fA-F]{{64}})",{_JWS}'
    rf'"size":{_JWS}(0|[1-9][0-9]{{0,18}}){_JWS}\}}',
    re.ASCII,
)


def _plain_row(match: re.Match[str]) -> _Row | None:
    """The row of a ``_BUILDER_ENTRY`` match; None sends it to the general path (which says
    what is wrong, if anything)."""
    b3, mtime, path, sha, size = match.groups()
    return _plain(path, int(size), int(mtime), sha, b3)


def _plain(path: str, size: int, mtime: int, sha: str, b3: str | None) -> _Row | None:
    """The row of an entry whose fields have the right types and digests the right form,
    when its numbers fit and its path passes every rule at once (``_PLAIN_PATH``)."""
    if (
        0 <= size < _INT64
        and -_INT64 <= mtime < _INT64
        and len(path) <= 4096
        and _PLAIN_PATH.match(path)
    ):
        return path, size, mtime, sha.lower(), None if b3 is None else b3.lower()
    return None


def _file_entry(obj: dict[str, Any]) -> _Row:
    path, size, mtime = obj.get("path"), obj.get("size"), obj.get("mtime_ns")
    sha, b3 = obj.get("sha256"), obj.get("blake3")
    if (  # the roster as the builder writes it: every check in a few C calls
        type(path) is str
        and type(size) is int
        and type(mtime) is int
        and type(sha) is str
        and (b3 is None or type(b3) is str)
        and _HEX64.match(sha)
        and (b3 is None or _HEX64.match(b3))
        and (row := _plain(path, size, mtime, sha, b3)) is not None
    ):
        return row
    path = validate_rel_path(obj["path"], "file")
    missing = _FILE_KEYS - {"blake3"} - set(obj)
    if missing:
        raise FormatError(f"file {path!r}: missing {sorted(missing)}")
    return (
        path,
        _int(obj["size"], f"file {path!r}: size"),
        _int(obj["mtime_ns"], f"file {path!r}: mtime_ns", signed=True),
        _digest(obj["sha256"], f"file {path!r}: sha256"),
        None if b3 is None else _digest(b3, f"file {path!r}: blake3"),
    )


def _created(value: object) -> datetime.datetime:
    if not isinstance(value, str):
        raise FormatError("created_at: must be an ISO-8601 string")
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FormatError(f"created_at: {value[:64]!r} is not an ISO-8601 time") from None


class _Parser:
    """The manifest's JSON read a chunk at a time: the top-level object by hand, each
    top-level value and each roster entry by ``raw_decode`` (C), at most ``MAX_VALUE_CHARS``
    of text at once. Also hashes the raw bytes and enforces ``MAX_MANIFEST_BYTES``."""

    def __init__(
        self, source: IO[bytes], *, what: str = "manifest", top_keys: frozenset[str] = _TOP_KEYS
    ) -> None:
        """``what`` names the document in errors; ``top_keys`` are its top-level keys. Any
        other document (the verified marker) has free-form top-level values besides
        ``files``: read as plain JSON, one value at a time."""
        self._what = what
        self._top_keys = top_keys
        self._plain = None if top_keys is _TOP_KEYS else json.JSONDecoder()
        self._source = source
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._sha = hashlib.sha256()
        self._read = 0
        self._eof = False
        self._buf = ""
        self._pos = 0
        self._decoder = json.JSONDecoder(object_pairs_hook=_Hook())

    @property
    def digest(self) -> str:
        return self._sha.hexdigest()

    def _more(self) -> bool:
        """Append the next chunk to the buffer (dropping what was consumed); False at EOF."""
        if self._eof:
            return False
        data = self._source.read(_READ)
        start = self._read
        self._read += len(data)
        if self._read > MAX_MANIFEST_BYTES:
            raise FormatError(f"{self._what} is more than {MAX_MANIFEST_BYTES} bytes")
        self._sha.update(data)
        self._eof = not data
        try:
            text = self._utf8.decode(data, final=self._eof)
        except UnicodeDecodeError as exc:
            raise FormatError(f"{self._what} is not UTF-8 (byte {start + exc.start})") from None
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        return True

    def _ws(self) -> str:
        """Skip whitespace; the next character ("" at the end)."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf) or not self._more():
                return self._buf[self._pos : self._pos + 1]

    def _expect(self, chars: str) -> str:
        c = self._ws()
        if not c or c not in chars:
            found = repr(c) if c else "the end"
            raise FormatError(f"{self._what} is not valid JSON: expected {chars!r}, found {found}")
        self._pos += 1
        return c

    def value(self, *, plain: bool = False) -> Any:
        """The next JSON value, through the validating hook (``plain``: as it is)."""
        self._ws()
        decoder = self._plain if plain and self._plain is not None else self._decoder
        while True:
            try:
                value, end = decoder.raw_decode(self._buf, self._pos)
            except (ValueError, RecursionError) as exc:
                if len(self._buf) - self._pos > MAX_VALUE_CHARS or not self._more():
                    raise FormatError(f"{self._what} is not valid JSON: {exc}") from None
                continue
            if end < len(self._buf) or self._eof:  # a number may go on in the next chunk
                self._pos = end
                return value
            if len(self._buf) - self._pos > MAX_VALUE_CHARS or not self._more():
                self._pos = end
                return value

    def array(self, kind: type, add: Callable[[Any], None]) -> None:
        """The items of the array that comes next, each checked to be a ``kind``.

        The common case is inlined (whitespace, one C scan per item, the separator), with
        at least ``_AHEAD`` characters buffered; anything else takes the general path."""
        self._expect("[")
        if self._ws() == "]":
            self._pos += 1
            return
        what = "files" if kind is tuple else "leftovers"
        ws, scan = _WS.match, self._decoder.scan_once  # type: ignore[attr-defined]
        entry = _BUILDER_ENTRY.match if kind is tuple else None
        while True:
            if len(self._buf) - self._pos < _AHEAD:
                self._more()
            buf = self._buf
            pos = ws(buf, self._pos).end()  # type: ignore[union-attr]
            fast = None if entry is None else entry(buf, pos)
            item: Any = None if fast is None else _plain_row(fast)
            if fast is not None and item is not None:  # as the builder writes it: one match
                self._pos = fast.end()
            elif buf[pos : pos + 1] != "{":
                self._pos = pos
                if self._ws() != "{":
                    raise FormatError("arrays may only hold objects (files, leftovers)")
                item = self.value()
            else:
                try:
                    item, end = scan(buf, pos)
                except (StopIteration, ValueError, RecursionError):
                    end = len(buf)  # incomplete or invalid: the general path says which
                if end < len(buf):
                    self._pos = end
                else:
                    self._pos = pos
                    item = self.value()
            if not isinstance(item, kind):
                raise FormatError(f"{what}: must be a list of {what} entries")
            add(item)
            pos = ws(self._buf, self._pos).end()  # type: ignore[union-attr]
            c = self._buf[pos : pos + 1]
            if c == ",":
                self._pos = pos + 1
                continue
            self._pos = pos
            if c == "]" or self._expect(",]") == "]":
                if c == "]":
                    self._pos += 1
                return

    def document(self) -> tuple[dict[str, Any], Roster, list[Leftover]]:
        """The top-level scalars, the files and the leftovers."""
        top: dict[str, Any] = {}
        files, leftovers = Roster(), list[Leftover]()
        if self._ws() != "{":
            if not self._ws():
                raise FormatError(f"{self._what} is not valid JSON: it is empty")
            raise FormatError(f"{self._what} must be a JSON object with schema, run_id, files, ...")
        self._pos += 1
        if self._ws() == "}":
            raise FormatError("empty object where the schema has none")
        while True:
            self._ws()
            key = self.value()
            if not isinstance(key, str):
                raise FormatError(f"{self._what} is not valid JSON: object keys must be strings")
            if key not in self._top_keys and self._plain is None:
                raise FormatError(f"unexpected object with keys {[key]}")
            if key in top:
                raise FormatError(f"duplicate key in object with keys {sorted(top)[:8]}")
            self._expect(":")
            if key in ("files", "leftovers") and self._ws() == "[":
                if key == "files":
                    self.array(tuple, files.add)  # the hook makes a tuple of a file entry
                else:
                    self.array(Leftover, leftovers.append)
                top[key] = None
            elif self._plain is not None:
                top[key] = self.value(plain=True)
            else:
                top[key] = self.value()
                if isinstance(top[key], list):
                    raise FormatError("arrays may only hold objects (files, leftovers)")
            if self._expect(",}") == "}":
                break
        if self._ws():
            raise FormatError(f"{self._what} is not valid JSON: extra data after the object")
        return top, files, leftovers


def _parse(source: IO[bytes]) -> Manifest:
    parser = _Parser(source)
    with collector_paused():
        top, files, leftovers = parser.document()
    missing = [k for k in _REQUIRED_TOP if k not in top]
    if missing:
        raise FormatError(f"manifest lacks {missing}")
    for key in ("files", "leftovers"):
        if key in top and top[key] is not None:  # present, but not an array
            raise FormatError(f"{key}: must be a list of {key} entries")
    if top["schema"] != SCHEMA:
        raise FormatError(f"schema is {str(top['schema'])[:80]!r}, expected {SCHEMA!r}")
    run_id, host, tool = top["run_id"], top["host"], top.get("tool")
    if not isinstance(run_id, str) or not builder._RUN_ID.match(run_id):
        raise FormatError("run_id: must be 1-200 characters without spaces, slashes or controls")
    if (
        not isinstance(host, str)
        or len(host) > 255
        or (tool is not None and not isinstance(tool, str))
    ):
        raise FormatError("host and tool must be strings")
    _check_roster(files, leftovers)
    totals = top.get("totals")
    if totals is not None:
        want = _Totals(len(files), files.total_bytes)
        if totals != want:
            raise FormatError(f"totals {totals} do not match the files ({want})")
    created = _created(top["created_at"])
    return Manifest(run_id, created, host, files, tuple(leftovers), parser.digest, tool)


def position(roster: Roster, path: str) -> int | None:
    """Where ``roster`` lists exactly ``path`` (not only its NFC twin), or None."""
    at = roster.find(normalize_path(path))
    return at if at is not None and roster.paths[at] == path else None


def read_roster_document(
    source: IO[bytes], what: str
) -> tuple[dict[str, Any], Roster, list[Leftover], str]:
    """Another document with a ``files`` roster of manifest entries (the verified marker):
    (its other top-level values as plain JSON, the roster in columns, leftovers, the SHA-256
    of its bytes), streamed like a manifest, so a million entries cost the roster's memory.
    Raises FormatError."""
    parser = _Parser(source, what=what, top_keys=frozenset())
    with collector_paused():
        top, files, leftovers = parser.document()
    _check_roster(files, leftovers)
    return top, files, leftovers, parser.digest


def read_manifest(source: IO[bytes]) -> Manifest:
    """Validate a manifest read from ``source`` a chunk at a time (a roster streamed from the
    box): never held whole, the roster in columns. Raises FormatError."""
    return _parse(source)


def parse_manifest(data: bytes) -> Manifest:
    """Validate raw manifest bytes. Raises FormatError with the first problem found."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise FormatError(f"manifest is {len(data)} bytes, more than {MAX_MANIFEST_BYTES}")
    return _parse(io.BytesIO(data))


def _check_roster(files: Roster, leftovers: list[Leftover]) -> None:
    """No path twice (after NFC), no path that is also another entry's directory.

    A roster in sorted NFC order (what the builder writes) is checked with bisect and no
    extra memory; any other order with a set of the NFC paths."""
    seen: set[str] = set()
    if not files._sorted_nfc:
        for path in files.paths:
            key = normalize_path(path)
            if key in seen:
                raise FormatError(f"path {path!r} is listed twice (after NFC normalisation)")
            seen.add(key)
    extra: set[str] = set()
    for left in leftovers:
        key = normalize_path(left.path)
        if key in extra or key in seen or files.find(key) is not None:
            raise FormatError(f"path {left.path!r} is listed twice (after NFC normalisation)")
        extra.add(key)

    def listed(key: str) -> bool:
        return key in extra or key in seen or files.find(key) is not None

    last_parent = None
    for path in (*files.paths, *(left.path for left in leftovers)):
        head = normalize_path(path).rpartition("/")[0]
        if head == last_parent:
            continue  # its parents were just checked
        last_parent = head
        while head:
            if listed(head):
                raise FormatError(f"path {head!r} is both a file and a directory")
            head = head.rpartition("/")[0]


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a manifest file (FormatError if missing, too big or invalid)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the streamed parse
    except OSError as exc:
        raise FormatError(
            f"cannot read manifest {os.fspath(path)!r}: {exc.strerror}",
            "build it on the box with `rentcheck manifest build`",
        ) from None
    try:
        with f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_MANIFEST_BYTES:
                raise FormatError(f"manifest is {size} bytes, more than {MAX_MANIFEST_BYTES}")
            return _parse(f)
    except FormatError as exc:
        raise FormatError(f"{os.fspath(path)}: {exc.message}", exc.hint) from None
    except OSError as exc:
        raise FormatError(
            f"cannot read manifest {os.fspath(path)!r}: {exc.strerror}",
            "copy it from the box again",
        ) from None


def check_manifest(path: str | os.PathLike[str]) -> tuple[Manifest | None, list[Finding]]:
    """``rentcheck manifest check``: the manifest, or None and one RC501 finding."""
    try:
        return load_manifest(path), []
    except FormatError as exc:
        rule = RULES_BY_CODE[MANIFEST_INVALID]
        return None, [rule.finding(exc.message, path=os.fspath(path))]


def build_manifest_file(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    run_id: str | None = None,
    jobs: int | None = None,
    with_blake3: bool = True,
) -> tuple[Path, Mapping[str, Any]]:
    """``rentcheck manifest build`` run locally: the code the box runs; errors as UsageError."""
    out = Path(output) if output is not None else Path(root) / builder.MANIFEST_NAME
    try:
        builder.check_output(os.fspath(root), os.fspath(out))
        manifest = builder.write_manifest(
            os.fspath(root), os.fspath(out), run_id, jobs, with_blake3
        )
    except builder.BuildError as exc:
        raise UsageError(exc.message, exc.hint) from None
    except OSError as exc:
        raise UsageError(f"cannot build the manifest: {exc}", "check ROOT and -o") from None
    return out, manifest

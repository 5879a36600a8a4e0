"""Metrics and config files: ``.json``, ``.jsonl``, ``.yaml``/``.yml`` must parse.

A ``.json`` file that is not one document but JSON Lines (one value per line, as detectron2
and mmengine write their metrics) is valid data when every line parses."""

from __future__ import annotations

import importlib
import json

from rentcheck.pull.formats.base import Issue, TensorInfo
from rentcheck.pull.rules import METRICS_UNPARSABLE

__all__ = ["MAX_TEXT_BYTES", "TextValidator"]

MAX_TEXT_BYTES = 64 * 1024 * 1024


def _parse_yaml(data: bytes) -> str | None:
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        return None  # PyYAML is optional; the digest still covers the file
    try:
        for _ in yaml.safe_load_all(data):
            pass
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        return " ".join(str(exc).split())[:300]
    return None


def _json_lines_named_json(data: bytes) -> bool:
    """JSON Lines under a ``.json`` name (detectron2's ``metrics.json``, mmengine's
    ``scalars.json``): two or more non-empty lines, the first one a whole JSON value."""
    rows = [line for line in data.splitlines() if line.strip()]
    if len(rows) < 2:
        return False
    try:
        json.loads(rows[0])
    except (ValueError, RecursionError):
        return False
    return True


def _parse_json(data: bytes, lines: bool, out: list[object]) -> str | None:
    try:
        if not lines:
            try:
                out.append(json.loads(data))
                return None
            except ValueError:
                if not _json_lines_named_json(data):
                    raise
            # Judged as JSON Lines: every line must parse (a cut last line is named).
        for number, line in enumerate(data.splitlines(), 1):
            if line.strip():
                try:
                    json.loads(line)
                except ValueError as exc:
                    return f"line {number}: {exc}"
    except (ValueError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    return None


class TextValidator:
    """Buffers the file (up to ``MAX_TEXT_BYTES``; larger files are only hashed) and parses it."""

    tensors: tuple[TensorInfo, ...] = ()

    def __init__(self, file_size: int, kind: str, *, keep: bool = False) -> None:
        self._kind = kind  # json | jsonl | yaml
        self._skip = file_size > MAX_TEXT_BYTES
        self._keep = keep and kind == "json"
        self._buf = bytearray()
        self.value: object = None  # the parsed document when ``keep`` (JSON only)

    def feed(self, chunk: memoryview) -> None:
        if not self._skip:
            self._buf += chunk

    def finish(self) -> list[Issue]:
        if self._skip:
            return []
        data, self._buf = bytes(self._buf), bytearray()
        if self._kind == "yaml":
            error = _parse_yaml(data)
        else:
            parsed: list[object] = []
            error = _parse_json(data, self._kind == "jsonl", parsed)
            if self._keep and parsed:
                self.value = parsed[0]
        if error is None:
            return []
        return [Issue(METRICS_UNPARSABLE, f"{self._kind.upper()} does not parse: {error}")]

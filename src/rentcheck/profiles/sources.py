"""Cited sources: which URLs a set of files cites, their text fingerprints, and the lock file.

The lock file (``sources.lock.json`` beside the profiles, written by ``rentcheck stale
--record-sources``) maps each URL to the fingerprint of its normalised text at the time the
facts were verified. A later ``--check-sources`` compares. Normalising drops markup, scripts,
styles, whitespace runs and obviously volatile tokens (long hex ids, ISO timestamps), so a page
that was merely re-rendered does not count as changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from rentcheck.atomic import write_atomic
from rentcheck.errors import FormatError
from rentcheck.model import Finding, Severity
from rentcheck.profiles import rules
from rentcheck.profiles.document import MarkdownDoc
from rentcheck.profiles.fetch import FetchResult

__all__ = [
    "LOCK_NAME",
    "CitedSource",
    "cited_sources",
    "fingerprint",
    "judge_fetches",
    "normalise_text",
    "read_lock",
    "record_entries",
    "write_lock",
]

LOCK_NAME = "sources.lock.json"
LOCK_SCHEMA = "rentcheck/sources-lock/v1"
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_VOLATILE = re.compile(
    r"\b[0-9a-f]{16,}\b|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CitedSource:
    url: str
    path: str  # the file that cites it, as shown in reports
    line: int
    lock: str  # the lock file that records its fingerprint


def cited_sources(doc: MarkdownDoc, lock: str) -> list[CitedSource]:
    """The ``sources[].url`` entries of a file's frontmatter."""
    if doc.frontmatter is None:
        return []
    from rentcheck.profiles.frontmatter import parse_yaml

    parsed = parse_yaml(doc.frontmatter)
    data = parsed.data
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        return []
    found = []
    for index, entry in enumerate(data["sources"]):
        url = entry.get("url") if isinstance(entry, dict) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            line = doc.frontmatter_line + (parsed.line_of(("sources", index, "url")) or 0)
            found.append(CitedSource(url, doc.path, line, lock))
    return found


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self.skipping += 1
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS and self.skipping:
            self.skipping -= 1
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def normalise_text(body: bytes, content_type: str = "") -> str:
    """The words a reader sees, single-spaced, with volatile tokens removed."""
    charset = re.search(r"charset=([\w.-]+)", content_type, re.IGNORECASE)
    try:
        text = body.decode(charset.group(1) if charset else "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    head = text.lstrip()[:200].lower()
    if "html" in content_type.lower() or head.startswith(("<!doctype html", "<html")):
        parser = _TextOnly()
        parser.feed(text)
        parser.close()
        text = "".join(parser.parts)
    return " ".join(_VOLATILE.sub(" ", text).split())


def fingerprint(body: bytes, content_type: str = "") -> str:
    return "sha256:" + hashlib.sha256(normalise_text(body, content_type).encode()).hexdigest()


def read_lock(path: str) -> dict[str, dict[str, Any]] | None:
    """The lock's entries by URL; None when the file does not exist yet."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise FormatError(
            f"cannot read {path}: {exc}",
            hint="restore it from version control, or delete it and run "
            "`rentcheck stale --record-sources`",
        ) from exc
    entries = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise FormatError(
            f"{path} is not a rentcheck sources lock (no 'sources' mapping)",
            hint="rerun `rentcheck stale --record-sources`",
        )
    return {str(url): dict(entry) for url, entry in entries.items() if isinstance(entry, dict)}


def write_lock(path: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
    document = {
        "schema": LOCK_SCHEMA,
        "sources": {url: dict(entries[url]) for url in sorted(entries)},
    }
    write_atomic(path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def record_entries(
    old: Mapping[str, Mapping[str, Any]] | None,
    cited: Iterable[str],
    fetched: Mapping[str, FetchResult],
    today: str,
) -> dict[str, dict[str, Any]]:
    """The new lock: a fresh fingerprint for each cited URL that answered 2xx/3xx, the old
    entry for one that did not, and nothing for URLs no longer cited."""
    entries: dict[str, dict[str, Any]] = {}
    for url in cited:
        result = fetched.get(url)
        if result is not None and result.answered and result.failure is None:
            entries[url] = {
                "fingerprint": fingerprint(result.body, result.content_type),
                "recorded": today,
                "status": result.status,
            }
        elif old and url in old:
            entries[url] = dict(old[url])
    return entries


def judge_fetches(
    cited: list[CitedSource],
    fetched: Mapping[str, FetchResult],
    locks: Mapping[str, Mapping[str, Mapping[str, Any]] | None],
    *,
    require_network: bool,
    compare: bool = True,
) -> list[Finding]:
    """Findings for the fetched sources. When no host answered at all, the network is
    taken to be missing: one note (an error with ``require_network``) instead of blaming
    every source, since a dead link and a missing network look the same from here."""
    findings: list[Finding] = []
    offline = bool(fetched) and not any(r.answered for r in fetched.values())
    if offline:
        rule = rules.NETWORK_UNAVAILABLE
        severity = Severity.ERROR if require_network else rule.default_severity
        message = f"no cited source answered ({len(fetched)} tried): the network looks unavailable"
        findings.append(rule.finding(message, severity=severity, details={"tried": len(fetched)}))
        if not require_network:
            return findings
    reported: set[tuple[str, str]] = set()
    for source in cited:
        result = fetched.get(source.url)
        if result is None or (source.url, source.lock) in reported:
            continue
        reported.add((source.url, source.lock))
        finding = _judge_one(source, result, locks.get(source.lock), compare)
        if finding is not None:
            findings.append(finding)
    return findings


def _judge_one(
    source: CitedSource,
    result: FetchResult,
    lock: Mapping[str, Mapping[str, Any]] | None,
    compare: bool,
) -> Finding | None:
    details: dict[str, Any] = {"url": source.url, "status": result.status}

    def make(rule: Any, message: str, severity: Severity | None = None) -> Finding:
        return rule.finding(  # type: ignore[no-any-return]
            message, path=source.path, line=source.line, col=1, severity=severity, details=details
        )

    if result.failure in ("http", "dns") and result.status != 429:
        why = result.detail or "the host name does not resolve"
        return make(rules.DEAD_SOURCE, f"source {source.url} no longer resolves: {why}")
    if result.failure is not None:
        why = {"timeout": "timed out", "connect": "refused the connection"}.get(
            result.failure, result.detail
        )
        return make(
            rules.UNREACHABLE_SOURCE,
            f"source {source.url} did not answer ({why}) after retries; try again later",
        )
    if not compare:
        return None
    entry = (lock or {}).get(source.url)
    lock_name = os.path.basename(source.lock)
    if entry is None:
        message = (
            f"source {source.url} has no fingerprint in {lock_name} (not recorded yet); run "
            "`rentcheck stale --record-sources` after verifying its facts"
        )
        return make(rules.UNRECORDED_SOURCE, message)
    now = fingerprint(result.body, result.content_type)
    if now != entry.get("fingerprint"):
        details.update(recorded=entry.get("recorded"), was=entry.get("fingerprint"), now=now)
        message = (
            f"source {source.url} changed since it was recorded in {entry.get('recorded')}: "
            "re-verify the facts that cite it, then run `rentcheck stale --record-sources`"
        )
        return make(rules.CHANGED_SOURCE, message)
    return None

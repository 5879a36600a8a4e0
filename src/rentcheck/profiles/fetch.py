"""Fetching cited sources over HTTP (extra ``sources``: requests, imported only here).

Every request has a connect and read timeout, is retried with backoff on timeouts, refused
connections and 429/5xx answers, and at most ``per_host`` requests run against one host at a
time, so checking thirty pages of one documentation site does not hammer it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rentcheck.errors import UsageError

__all__ = ["FetchResult", "fetch_all"]

_USER_AGENT = "rentcheck-source-check (+https://github.com/rentcheck/rentcheck)"
_MAX_BYTES = 20_000_000  # a documentation page; anything bigger is cut, not buffered whole


@dataclass(frozen=True)
class FetchResult:
    url: str
    status: int | None = None  # the final HTTP status, None when no answer came
    body: bytes = b""
    content_type: str = ""
    failure: str | None = None  # "dns" | "timeout" | "connect" | "http" | "error"
    detail: str = ""

    @property
    def answered(self) -> bool:
        """The host answered with an HTTP response (of any status)."""
        return self.status is not None


def fetch_all(
    urls: Sequence[str],
    *,
    timeout: float = 10.0,
    retries: int = 2,
    per_host: int = 2,
    workers: int = 8,
    backoff: float = 0.5,
) -> dict[str, FetchResult]:
    try:
        import requests  # noqa: F401  (fail early with the install hint)
    except ImportError as exc:
        raise UsageError(
            "--check-sources needs the 'requests' package",
            hint="pip install 'rentcheck[sources]'",
        ) from exc
    from concurrent.futures import ThreadPoolExecutor

    limits: dict[str, threading.BoundedSemaphore] = {}
    lock = threading.Lock()
    local = threading.local()

    def one(url: str) -> FetchResult:
        host = urlsplit(url).netloc.lower()
        with lock:
            gate = limits.setdefault(host, threading.BoundedSemaphore(max(1, per_host)))
        with gate:
            session = getattr(local, "session", None)
            if session is None:
                session = local.session = _session(retries, backoff)
            return _fetch(session, url, timeout)

    unique = list(dict.fromkeys(urls))
    if not unique:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(unique)))) as pool:
        return dict(zip(unique, pool.map(one, unique), strict=True))


def _session(retries: int, backoff: float) -> Any:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,  # give back the last answer, so its status can be reported
        respect_retry_after_header=False,  # a server must not make a check sleep for hours
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = _USER_AGENT
    return session


def _fetch(session: Any, url: str, timeout: float) -> FetchResult:
    import requests

    try:
        with session.get(url, timeout=(timeout, timeout), stream=True) as response:
            body = response.raw.read(_MAX_BYTES, decode_content=True) or b""
            status = response.status_code
            content_type = response.headers.get("Content-Type", "")
    except requests.RequestException as exc:
        failure = _classify(exc)
        return FetchResult(url, failure=failure, detail=_one_line(exc))
    except OSError as exc:  # a socket error that escaped requests' wrapping
        return FetchResult(url, failure="connect", detail=_one_line(exc))
    if status >= 400:
        return FetchResult(url, status, body, content_type, "http", f"HTTP {status}")
    return FetchResult(url, status, body, content_type)


def _classify(exc: BaseException) -> str:
    import requests
    from urllib3.exceptions import (
        ConnectTimeoutError,
        NameResolutionError,
        ReadTimeoutError,
    )

    if isinstance(exc, requests.Timeout):
        return "timeout"
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, NameResolutionError):
            return "dns"
        if isinstance(current, (ReadTimeoutError, ConnectTimeoutError, TimeoutError)):
            return "timeout"
        pending += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        pending += [arg for arg in current.args if isinstance(arg, BaseException)]
    if isinstance(exc, requests.ConnectionError):
        return "connect"
    return "error"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]

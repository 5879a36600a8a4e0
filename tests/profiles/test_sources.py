"""`--check-sources` / `--record-sources` against a real HTTP server on 127.0.0.1: a page that
is gone (404), one that never answers in time, one that changed since it was recorded, and one
that only differs in volatile whitespace, scripts and timestamps. Nothing leaves the machine."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rentcheck.profiles.fetch import FetchResult, fetch_all
from rentcheck.profiles.sources import CitedSource, fingerprint, judge_fetches, normalise_text

pytest.importorskip("requests")


class Site:
    """A small documentation site whose pages behave like the real web's worst."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.active = 0
        self.most_active = 0
        self.release = threading.Event()
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                with site.lock:
                    count = site.hits[self.path] = site.hits.get(self.path, 0) + 1
                    site.active += 1
                    site.most_active = max(site.most_active, site.active)
                self.counted = True
                try:
                    site.answer(self, count)
                finally:
                    site.done(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, handler: BaseHTTPRequestHandler, count: int) -> None:
        path = handler.path
        if path == "/gone":
            return self._send(handler, 404, b"not here")
        if path == "/slow":
            self.release.wait(30)  # answers only when the test is over
            return self._send(handler, 200, b"too late")
        if path == "/flaky" and count == 1:
            return self._send(handler, 503, b"busy")
        if path.startswith("/hold"):
            self.release.wait(0.05)  # long enough for parallel requests to overlap
        if path == "/changing":
            body = f"<p>Volume disk: ${count}.10 per GB per month</p>"
        else:
            pad = " \n\t" * count
            body = (
                f"<html><head><title>Pricing</title><script>var build='{count:040x}';</script>"
                f"<style>p {{margin: {count}px}}</style></head><body>{pad}<p>Volume disk:"
                f"{pad}$0.10 per&nbsp;GB per month</p>{pad}<footer>Rendered "
                f"2026-11-30T03:{count:02d}:00Z, build {count:040x}</footer></body></html>"
            )
        return self._send(handler, 200, body.encode(), "text/html; charset=utf-8")

    def done(self, handler: BaseHTTPRequestHandler) -> None:
        """Count the request as finished once; before its answer is written, so a client
        that starts its next request on receipt never overlaps with this one here."""
        if getattr(handler, "counted", False):
            handler.counted = False  # type: ignore[attr-defined]
            with self.lock:
                self.active -= 1

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str = "text/plain"
    ) -> None:
        self.done(handler)
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    server = Site()
    yield server
    server.close()


def _profile(directory: Path, urls: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    sources = "".join(f'  - url: "{u}"\n    verified: "2026-10"\n' for u in urls)
    path = directory / "site.md"
    path.write_text(
        f"---\nplatform: site\nsources:\n{sources}---\n\n- Fact (verified site 2026-10).\n"
    )
    return path


FAST = ("--today", "2026-11", "--timeout", "0.3", "--retries", "0", "--output-format", "json")


def _by_url(out: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for result in json.loads(out)["results"]:
        url = result["details"].get("url")
        if url:
            found.setdefault(url.rsplit("/", 1)[1], []).append(result["code"])
    return found


def test_record_then_check_finds_gone_slow_and_changed_pages(
    cli, tmp_path: Path, site: Site
) -> None:
    pages = ["stable", "changing", "gone", "slow"]
    _profile(tmp_path / "p", [f"{site.base}/{page}" for page in pages])
    before = cli("stale", "p", "--check-sources", *FAST, cwd=tmp_path)
    assert before.code == 1
    assert _by_url(before.out) == {
        "stable": ["RC723"],  # not recorded yet: a note
        "changing": ["RC723"],
        "gone": ["RC720"],
        "slow": ["RC721"],
    }

    recorded = cli("stale", "p", "--record-sources", *FAST, cwd=tmp_path)
    assert _by_url(recorded.out) == {"gone": ["RC720"], "slow": ["RC721"]}
    lock = json.loads((tmp_path / "p" / "sources.lock.json").read_text())
    assert lock["schema"] == "rentcheck/sources-lock/v1"
    assert sorted(u.rsplit("/", 1)[1] for u in lock["sources"]) == ["changing", "stable"]
    assert all(e["recorded"] == "2026-11" and e["status"] == 200 for e in lock["sources"].values())
    assert json.loads(recorded.out)["sources"]["recorded"] == {
        str(tmp_path / "p" / "sources.lock.json"): 2
    }

    after = cli("stale", "p", "--check-sources", *FAST, cwd=tmp_path)
    found = _by_url(after.out)
    assert found == {"changing": ["RC722"], "gone": ["RC720"], "slow": ["RC721"]}
    assert site.hits["/stable"] == 3  # fetched each time, and equal despite the noise
    changed = next(r for r in json.loads(after.out)["results"] if r["code"] == "RC722")
    assert (
        changed["details"]["recorded"] == "2026-11"
        and changed["details"]["was"] != changed["details"]["now"]
    )


def test_retry_turns_a_passing_503_into_an_answer(cli, tmp_path: Path, site: Site) -> None:
    _profile(tmp_path / "p", [f"{site.base}/flaky"])
    args = ("--today", "2026-11", "--timeout", "2", "--output-format", "json")
    once = cli("stale", "p", "--check-sources", "--retries", "0", *args, cwd=tmp_path)
    assert _by_url(once.out) == {"flaky": ["RC720"]}  # a 5xx without retries
    site.hits.clear()
    again = cli("stale", "p", "--record-sources", "--retries", "1", *args, cwd=tmp_path)
    assert _by_url(again.out) == {} and site.hits["/flaky"] == 2


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_offline_runs_note_it_unless_the_network_is_required(cli, tmp_path: Path) -> None:
    port = _closed_port()
    _profile(tmp_path / "p", [f"http://127.0.0.1:{port}/a", f"http://127.0.0.1:{port}/b"])
    offline = cli("stale", "p", "--check-sources", *FAST, cwd=tmp_path)
    assert offline.code == 0
    (result,) = json.loads(offline.out)["results"]
    assert (result["code"], result["severity"]) == ("RC724", "note")
    required = cli("stale", "p", "--check-sources", "--require-network", *FAST, cwd=tmp_path)
    assert required.code == 1
    codes = sorted(r["code"] for r in json.loads(required.out)["results"])
    assert codes == ["RC721", "RC721", "RC724"]
    recorded = cli("stale", "p", "--record-sources", *FAST, cwd=tmp_path)
    assert recorded.code == 0 and not (tmp_path / "p" / "sources.lock.json").exists()


def test_at_most_per_host_requests_run_at_once(site: Site) -> None:
    urls = [f"{site.base}/hold/{n}" for n in range(6)]
    results = fetch_all(urls, timeout=5, retries=0, per_host=1)
    assert all(r.status == 200 for r in results.values()) and site.most_active == 1
    site.most_active = 0
    fetch_all([u + "?again" for u in urls], timeout=5, retries=0, per_host=2)
    assert 1 <= site.most_active <= 2


def test_unreadable_lock_is_a_one_line_error(cli, tmp_path: Path, site: Site) -> None:
    _profile(tmp_path / "p", [f"{site.base}/stable"])
    (tmp_path / "p" / "sources.lock.json").write_text("{not json")
    result = cli("stale", "p", "--check-sources", *FAST, cwd=tmp_path)
    assert result.code == 2 and "sources.lock.json" in result.err and result.err.count("\n") == 1


def test_normalised_text_ignores_markup_noise_but_not_words() -> None:
    one = b"<script>x=1</script><p>Price:\n\n  $0.10&nbsp;per GB</p> 2026-11-30T03:00:00Z"
    two = b"<script>x=2</script>  <p>Price: $0.10\xc2\xa0per   GB</p> 2026-12-01T09:30:00Z"
    assert normalise_text(one, "text/html") == "Price: $0.10 per GB"
    assert fingerprint(one, "text/html") == fingerprint(two, "text/html")
    assert fingerprint(one, "text/html") != fingerprint(one.replace(b"0.10", b"0.20"), "text/html")
    assert normalise_text(b"plain   text\n", "text/plain") == "plain text"


def test_dns_failure_and_rate_limits_are_judged_apart() -> None:
    cited = [
        CitedSource(f"https://{n}.example/x", "p.md", 3, "lock") for n in ("dns", "busy", "ok")
    ]
    fetched = {
        cited[0].url: FetchResult(cited[0].url, failure="dns", detail="name does not resolve"),
        cited[1].url: FetchResult(cited[1].url, 429, failure="http", detail="HTTP 429"),
        cited[2].url: FetchResult(cited[2].url, 200, b"hello"),
    }
    lock = {"lock": {cited[2].url: {"fingerprint": fingerprint(b"hello"), "recorded": "2026-10"}}}
    findings = judge_fetches(cited, fetched, lock, require_network=False)
    assert [(f.code, f.line) for f in findings] == [("RC720", 3), ("RC721", 3)]

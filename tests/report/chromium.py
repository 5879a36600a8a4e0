"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only).

``load_page(url, screenshot)`` opens a page, waits for its load event, saves a PNG screenshot
and returns every console message, uncaught exception and browser log entry at error level
(CSP violations and failed loads arrive as log entries), plus the answers to ``evaluate``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DESKTOP", "PHONE", "PageLoad", "chromium_binary", "load_page"]


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageLoad:
    errors: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)


class _Pipe:
    def __init__(self, binary: str, profile: str) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Chromium reads commands on fd 3 and writes answers on fd 4: the child's ends are
        # moved above 10 first, so placing one on 3 or 4 can never overwrite the other.
        to_child_r, from_child_w = _high(to_child_r), _high(from_child_w)
        command = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        # bash places the two ends on fd 3 and 4 (no preexec_fn: unsafe with threads).
        placed = f'exec "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", placed, "bash", *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_child_r, from_child_w),
            start_new_session=True,  # its own group: close() ends the helpers with it
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30,
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self.read(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events):
            return
        while True:
            event = self.read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return

    def read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(raw)
        return decoded

    def close(self) -> None:
        # The whole group: chromium's renderer and crash helpers outlive the browser process
        # and kept writing into the profile while it was removed ("Directory not empty").
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the helpers too, before the profile goes
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        os.close(self._to_child)
        os.close(self._from_child)


def _high(fd: int) -> int:
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value")) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            found.append("exception: " + str(params["exceptionDetails"].get("text")))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            found.append(f"log ({params['entry'].get('source')}): {params['entry'].get('text')}")
    return found


DESKTOP = (1200, 1400, False)
PHONE = (390, 844, True)  # a phone's CSS pixels, mobile emulation on


def load_page(
    binary: str,
    url: str,
    screenshot: str,
    evaluate: tuple[str, ...] = (),
    viewport: tuple[int, int, bool] = DESKTOP,
) -> PageLoad:
    with tempfile.TemporaryDirectory(prefix="rentcheck-chromium-") as profile:
        pipe = _Pipe(binary, profile)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
                pipe.send(domain, session=session)
            pipe.send(
                "Emulation.setDeviceMetricsOverride",
                {
                    "width": viewport[0],
                    "height": viewport[1],
                    "deviceScaleFactor": 1,
                    "mobile": viewport[2],
                },
                session=session,
            )
            pipe.events.clear()
            pipe.send("Page.navigate", {"url": url}, session=session)
            pipe.wait_for("Page.loadEventFired")
            time.sleep(0.3)  # late console messages and CSP reports
            values = [
                pipe.send(
                    "Runtime.evaluate", {"expression": e, "returnByValue": True}, session=session
                )["result"].get("value")
                for e in evaluate
            ]
            shot = pipe.send(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True},
                session=session,
            )
            with open(screenshot, "wb") as handle:
                handle.write(base64.b64decode(shot["data"]))
            # Drain what arrived meanwhile, then judge.
            try:
                while True:
                    pipe.events.append(pipe.read(time.monotonic() + 0.2))
            except TimeoutError:
                pass
            return PageLoad(errors=_errors(pipe.events), values=values)
        finally:
            pipe.close()

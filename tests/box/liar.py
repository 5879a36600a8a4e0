"""A box that answers every command with the same stdout: a probe that lies."""

from __future__ import annotations

from rentcheck.box.transport import Box, BoxStats, CommandResult


class CannedBox(Box):
    def __init__(self, stdout: bytes) -> None:
        self.name = "liar"
        self.stats = BoxStats(connections=1)
        self.stdout = stdout

    def run(
        self, script: str, *, stdin: bytes = b"", timeout: float = 60.0, label: str = ""
    ) -> CommandResult:
        self.stats.exec_requests += 1
        return CommandResult(0, self.stdout, b"", 0.01)

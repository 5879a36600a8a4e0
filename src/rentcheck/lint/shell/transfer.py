"""RC115 bulk-copy-without-resume: transfers off the box that restart from zero on a drop."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import ShellScript

RULE = Rule(
    code="RC115",
    name="bulk-copy-without-resume",
    family="shell",
    summary="`scp -r` of a directory, or rsync to/from a host without `--partial`",
    why=(
        "Pulling checkpoints over a flaky link is where a connection drops. `scp` cannot "
        "resume: after a drop every file is sent again from byte 0 (and the scp protocol, "
        "`scp -O` or OpenSSH before 9.0, copies what a symlink points to, so a `best.pt` "
        "link arrives as a second full checkpoint). rsync without `--partial` deletes the "
        "half-received file when the connection drops, so a 20 GB checkpoint is sent again "
        "from the start each time. Meanwhile the box bills by the hour."
    ),
    example_bad="scp -r box:/root/autodl-tmp/ckpt ./ckpt",
    example_good="rsync -a --partial --info=progress2 box:/root/autodl-tmp/ckpt/ ./ckpt/",
    fix="Use `rsync -a --partial` (or `-P`, or `--append-verify`) for anything large.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

_REMOTE = re.compile(r"^([\w.@-]+):(?!//)")  # host:path, not a URL


def _short_flags(argv: list[str]) -> str:
    return "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))


def _run(script: ShellScript) -> Iterator[Hit]:
    for current in script.all_scripts():
        for command in current.commands_named(("scp", "rsync")):
            argv = command.argv
            if command.name == "scp" and "r" in _short_flags(argv):
                yield hit(
                    command.line,
                    command.col,
                    "`scp -r` restarts from zero on a dropped connection: use "
                    "`rsync -a --partial` for directories",
                )
            elif command.name == "rsync" and any(_REMOTE.match(a) for a in argv):
                resumable = (
                    "P" in _short_flags(argv)
                    or any(a in ("--partial", "--append-verify", "--append") for a in argv)
                    or any(a.startswith("--partial-dir") for a in argv)
                )
                if not resumable:
                    yield hit(
                        command.line,
                        command.col,
                        "rsync to/from a host without `--partial`: an interrupted file is "
                        "thrown away and sent again; add `--partial` (or `-P`)",
                    )


CHECK = shell_check(RULE, _run)

"""RC113 secret-in-command-text: credentials written into scripts and command strings."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from rentcheck.lint.shell.common import Hit, hit, shell_check
from rentcheck.lint.shell.tree import ShellScript
from rentcheck.model import Applicability, Rule, Severity

RULE = Rule(
    code="RC113",
    name="secret-in-command-text",
    family="shell",
    summary="A token, key or password literal in a script or command string",
    why=(
        "A key in a launch script travels everywhere the script does: the repo, the rented "
        "box's disk (which the next tenant may get), `ps` output and shell history on a shared "
        "host, and the logs that echo the command. W&B, Hugging Face and cloud keys found "
        "this way are used within hours. Secrets belong in the environment or a file with "
        "mode 600, sent to the box on stdin."
    ),
    example_bad="wandb login 0123456789abcdef0123456789abcdef01234567",
    example_good='wandb login "$WANDB_API_KEY"   # set outside the repo, sent over ssh stdin',
    fix="Delete the literal, revoke the key, and read it from the environment or a 600 file.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "W&B API key",
        re.compile(r"(?i)(wandb[_ ](api[_ ]?key|login)\W{0,3}(--relogin\s+)?)([0-9a-f]{40})\b"),
    ),
    ("OpenAI-style key", re.compile(r"\bsk-[A-Za-z0-9_-]{32,}\b")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    (
        "credential assignment",
        re.compile(
            # The name must end in the keyword: HF_TOKEN, api_key, DB_PASSWORD; not TOKENIZER.
            r"(?i)\b([A-Z0-9_]*(api[_-]?key|token|secret|passw(or)?d))\s*[=:]\s*"
            r"""(["']?)([^\s"'$`{}<>]{8,})\4"""
        ),
    ),
)
_PLACEHOLDER = re.compile(
    r"(?i)^(x{3,}.*|.*\.\.\..*|your[_-].*|changeme|change[_-]me|placeholder|example.*|dummy.*|"
    r"test.*|redacted|none|null|false|true|\*+|<.*>|.*_here)$"
)


# Every pattern above needs one of these words: find candidate lines in one pass over the
# text, then run the exact patterns on those lines only.
_TRIGGER = re.compile(r"key|token|secret|passw|hf_|akia|asia|wandb|sk-|gh[pousr]_")
_TRIGGER_ANY_CASE = re.compile(_TRIGGER.pattern, re.IGNORECASE)


def _candidate_lines(text: str) -> list[tuple[int, str]]:
    lines = text.split("\n")  # line numbers as every other rule counts them
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    wanted: dict[int, None] = {}
    # lower() keeps offsets only for ASCII; other text takes the slower case-blind search.
    lowered = text.lower() if text.isascii() else None
    matches = (
        _TRIGGER.finditer(lowered) if lowered is not None else _TRIGGER_ANY_CASE.finditer(text)
    )
    for match in matches:
        wanted[bisect.bisect_right(starts, match.start()) - 1] = None
    return [(index + 1, lines[index]) for index in wanted if 0 <= index < len(lines)]


def _run(script: ShellScript) -> Iterator[Hit]:
    for number, full_line in _candidate_lines(script.source.text):
        line = full_line[:10_000]  # a minified blob is not where keys hide; keep regexes bounded
        for label, pattern in _PATTERNS:
            for match in pattern.finditer(line):
                value = match.group(match.lastindex or 0) if label != "private key" else ""
                if label == "credential assignment":
                    value = match.group(5)
                    if _PLACEHOLDER.match(value) or value.isdigit():
                        continue
                shown = f"{value[:4]}…" if value else ""
                yield hit(
                    number,
                    match.start() + 1,
                    f"{label} in the script text ({shown or 'literal'}): revoke it and read it "
                    "from the environment or a mode-600 file instead",
                    kind=label,
                )
                break
            else:
                continue
            break  # one finding per line: the most specific pattern wins


CHECK = shell_check(RULE, _run)

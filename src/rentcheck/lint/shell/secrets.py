"""RC113 secret-in-command-text: credentials written into scripts and command strings."""

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
    example_good=(
        "wandb login   # reads WANDB_API_KEY, set outside the repo and sent over ssh stdin: "
        "no key in the script or in argv"
    ),
    fix="Delete the literal, revoke the key, and read it from the environment or a 600 file.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.ERROR,
)

# (label, pattern, needles, ignoring case): the pattern cannot match a line that holds none of
# the needles (searched in the lowered line when the pattern ignores case). `in` finds that
# out far faster than the regex, on almost every line.
_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...], bool], ...] = (
    (
        "private key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
        ("PRIVATE KEY-----",),
        False,
    ),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), ("hf_",), False),
    ("AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA"), False),
    (
        "W&B API key",
        re.compile(r"(?i)(wandb[_ ](api[_ ]?key|login)\W{0,3}(--relogin\s+)?)([0-9a-f]{40})\b"),
        ("wandb",),
        True,
    ),
    ("OpenAI-style key", re.compile(r"\bsk-[A-Za-z0-9_-]{32,}\b"), ("sk-",), False),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), ("gh",), False),
    (
        "credential assignment",
        re.compile(
            # The name must end in the keyword: HF_TOKEN, api_key, DB_PASSWORD; not TOKENIZER.
            r"(?i)\b([A-Z0-9_]*(api[_-]?key|token|secret|passw(or)?d))\s*[=:]\s*"
            r"""(["']?)([^\s"'$`{}<>]{8,})\4"""
        ),
        ("key", "token", "secret", "passw"),
        True,
    ),
)
_PLACEHOLDER = re.compile(
    r"(?i)^(x{3,}.*|.*\.\.\..*|your[_-].*|changeme|change[_-]me|placeholder|example.*|dummy.*|"
    r"test.*|redacted|none|null|false|true|\*+|<.*>|.*_here)$"
)


# Every pattern above needs one of these words: find candidate lines first, then run the
# exact patterns on those lines only.
_TRIGGER_WORDS = ("key", "token", "secret", "passw", "hf_", "akia", "asia", "wandb", "sk-")
_GITHUB_TRIGGER = re.compile(r"gh[pousr]_")
_GITHUB_KINDS = frozenset("pousr")
_TRIGGER_ANY_CASE = re.compile(
    "|".join([*map(re.escape, _TRIGGER_WORDS), _GITHUB_TRIGGER.pattern]), re.IGNORECASE
)


_DOTLESS_I = "\u0131"
_LONG_S = "\u017f"


def _lowers_like_re(text: str, lowered: str) -> bool:
    """Whether ``lowered`` (text.lower()) has an ASCII letter exactly where a case-blind
    regex sees one in ``text``. re lowers one character at a time and also takes the dotless
    i (U+0131) for i and the long s (U+017F) for s; lower() agrees with it on every other
    character unless a character grows (U+0130 becomes two), which the length shows."""
    if text.isascii():
        return True
    return len(lowered) == len(text) and _DOTLESS_I not in text and _LONG_S not in text


def _trigger_offsets(text: str) -> list[int]:
    """Where a trigger word starts in ``text``, in order (overlapping ones included)."""
    lowered = text.lower()
    if not _lowers_like_re(text, lowered):
        return [match.start() for match in _TRIGGER_ANY_CASE.finditer(text)]
    # One str.find scan per word is many times faster than an alternation regex, which
    # tries every branch at nearly every position of the text.
    offsets = _github_offsets(lowered)
    for word in _TRIGGER_WORDS:
        at = lowered.find(word)
        while at != -1:
            offsets.append(at)
            at = lowered.find(word, at + 1)
    return sorted(offsets)


def _github_offsets(lowered: str) -> list[int]:
    """Where _GITHUB_TRIGGER matches in ``lowered``: at each "gh", a look at the two
    characters after it, where the regex would test every position of the text."""
    offsets: list[int] = []
    at = lowered.find("gh")
    while at != -1:
        if lowered[at + 2 : at + 3] in _GITHUB_KINDS and lowered[at + 3 : at + 4] == "_":
            offsets.append(at)
        at = lowered.find("gh", at + 1)
    return offsets


def _candidate_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line with a trigger word, numbered as every other rule
    counts lines (split at "\\n")."""
    found: list[tuple[int, str]] = []
    line_index = 0
    counted_to = 0
    for at in _trigger_offsets(text):
        line_index += text.count("\n", counted_to, at)
        counted_to = at
        if found and found[-1][0] == line_index + 1:
            continue  # another trigger on the same line
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        found.append((line_index + 1, text[start : end if end != -1 else len(text)]))
    return found


def _may_match(line: str, lowered: str | None, needles: tuple[str, ...], any_case: bool) -> bool:
    if lowered is None:
        return True  # non-ASCII: re's case folding is not lower()'s; let the pattern decide
    haystack = lowered if any_case else line
    return any(needle in haystack for needle in needles)


def _run(script: ShellScript) -> Iterator[Hit]:
    for number, full_line in _candidate_lines(script.source.text):
        line = full_line[:10_000]  # a minified blob is not where keys hide; keep regexes bounded
        lowered = line.lower() if line.isascii() else None
        for label, pattern, needles, any_case in _PATTERNS:
            if not _may_match(line, lowered, needles, any_case):
                continue
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

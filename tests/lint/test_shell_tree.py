"""The parsed-script vocabulary the shell rules share, and the shortcuts it takes for speed:
each shortcut must give what the plain, slow reading of the tree gives."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from rentcheck.lint.shell import secrets
from rentcheck.lint.shell.tree import Command, ShellScript, script_of
from rentcheck.lint.shell.words import loose_value, text
from rentcheck.lint.source import FileKind, SourceFile

pytest.importorskip("tree_sitter_bash")


def _script(body: str) -> ShellScript:
    data = body.encode()
    return script_of(SourceFile("t.sh", "/t.sh", data, 0o755, FileKind.SHELL))


def _names_from_children(command: Command) -> str:
    """The command name read the slow way: every child of the node."""
    for child in command.node.children:
        if child.type == "command_name":
            name = loose_value(child.children[0]) if child.children else text(child)
            return name.rsplit("/", 1)[-1]
    return ""


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("python3 train.py", "python3"),
        ("/usr/bin/python3 -u x.py", "python3"),
        ('"python" x.py', "python"),
        ("'ssh' box ls", "ssh"),
        ("py\\thon x.py", "python"),
        ('"$PY" x.py', "$PY"),
        ("A=1 B='2' env", "env"),
        ("> out.log echo hi", "echo"),
    ],
)
def test_command_name_matches_a_full_read_of_the_node(body: str, name: str) -> None:
    (command,) = _script(body).commands()
    assert command.name == name == _names_from_children(command)


def test_arguments_and_env_prefix_are_read_on_first_use() -> None:
    (command,) = _script("A=1 B='two' nohup python -u 'a b.py' > log 2>&1 # note\n").commands()
    assert command.env == {"A": "1", "B": "two"}
    assert command.argv == ["python", "-u", "a b.py"]
    assert [a.type for a in command.args] == ["word", "word", "raw_string"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("sleep 1 &\n", [True]),
        ("a && b\n", [False, False]),
        ("a 2>&1 | tee log\n", [False, False]),
        ("a &> log\n", [False]),
        ("a | b &\nc\n", [True, True, False]),
        ("x=$(a &)\n", [True]),
    ],
)
def test_backgrounded_only_before_an_ampersand_token(body: str, expected: list[bool]) -> None:
    commands = _script(body).commands()
    assert [c.backgrounded() for c in commands] == expected
    for command in commands:  # the same as the climb to the statement and its next sibling
        sibling = command.statement().next_sibling
        assert command.backgrounded() == (sibling is not None and sibling.type == "&")


def test_commands_in_gives_what_a_walk_of_the_subtree_gives() -> None:
    script = _script(
        "while true; do\n  x=$(sleep 1; echo $(sleep 2))\n  if a; then sleep 3; fi\ndone\n"
        "sleep 4\nwhile :; do read -r l; done\n"
    )
    for loop in script.of("while_statement"):
        walked = [
            n.start_byte
            for n in script.walk(loop)
            if n.type == "command" and script._command(n).name in ("sleep", "read")
        ]
        found = [c.node.start_byte for c in script.commands_in(loop, ("sleep", "read"))]
        assert found == walked


@pytest.mark.parametrize(
    "body",
    [
        "echo ok\nif then fi\n",
        "echo 'never closed\nls\n",
        "for x in; do\n  echo $((1 +))\ndone\n",
        "case x in\n a) echo;;\n",
    ],
)
def test_first_error_line_is_that_of_a_full_walk(body: str) -> None:
    script = _script(body)
    assert script.partial
    first = next(n for n in script.walk() if n.is_error or n.is_missing)
    assert script.first_error_line() == first.start_point[0] + 1


@pytest.mark.parametrize(
    "text_",
    [
        "export API_KEY=abcdefgh12345678\nls\n",
        "caf\u00e9\nTOKEN=abcdefgh12345678\n",
        "\u212aEY=abcdefgh12345678\n",  # Kelvin sign: lowers to k like re does
        "\u017fecret=abcdefgh12345678\nok\n",  # long s: re takes it for s, lower() does not
        "a\u0131sia\nASIA\u0130x\npa\u017f\u017fw\n",
        "\u0130\u0130 key\nnothing here\n\u03a3 token",
        "hf_\r\nKEY\r\n\r\nwandb\n",
    ],
)
def test_secret_candidate_lines_are_the_lines_a_regex_finds(text_: str) -> None:
    # The trigger words as written before the fast path existed (an independent oracle).
    trigger = re.compile(r"key|token|secret|passw|hf_|akia|asia|wandb|sk-|gh[pousr]_", re.I)
    expected = [
        (number, line)
        for number, line in enumerate(text_.split("\n"), start=1)
        if trigger.search(line)
    ]
    assert secrets._candidate_lines(text_) == expected


def test_loading_the_rules_does_not_load_the_parse_tree_module() -> None:
    code = (
        "import sys, rentcheck.registry\n"
        "assert 'rentcheck.lint.shell.tree' not in sys.modules\n"
        "assert 'tree_sitter' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


_BODY = (
    "A=$(cp a b) rsync x y\nwhile read -r h; do ssh $h 'sleep 1; cp c d'; done < hosts\n"
    'for f in *; do echo $(cp "$f" /tmp) & done\n/bin/cp e f | grep -q ok\n'
)


@pytest.mark.parametrize("names", [{"cp"}, {"cp", "rsync"}, {"ssh", "echo", "grep"}, {"nope"}])
def test_commands_named_are_those_of_a_full_list(names: set[str]) -> None:
    script = _script(_BODY)
    expected = [c for c in script.commands() if c.name in names]
    assert script.commands_named(names) == expected  # the same objects, in document order
    assert script.has_command(names) == bool(expected)
    assert script.commands_where(names.__contains__) == expected


@pytest.mark.parametrize(
    "types", [("while_statement",), ("while_statement", "for_statement", "c_style_for_statement")]
)
def test_within_any_gives_what_a_climb_to_the_root_gives(types: tuple[str, ...]) -> None:
    script = _script(_BODY)
    for command in script.commands():
        climbed = any(a.type in types for a in command.ancestors())
        assert script.within_any(command.node, types) == climbed


@pytest.mark.parametrize("text_", ["ghp_ x gh_ ghx_ GHS_", "gh", "aghu_ghr_", "ghghp_\ngho"])
def test_github_offsets_are_where_the_regex_matches(text_: str) -> None:
    lowered = text_.lower()
    expected = [m.start() for m in secrets._GITHUB_TRIGGER.finditer(lowered)]
    assert secrets._github_offsets(lowered) == expected

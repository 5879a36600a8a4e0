"""``rentcheck completion bash|zsh|fish``: a completion script, derived from the parser.

The commands and each command's options are read from the same argparse tree that parses
them, so a new option completes without anyone editing a script. Install with e.g.
``rentcheck completion bash > ~/.local/share/bash-completion/completions/rentcheck``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["SHELLS", "add_completion_parser", "completion_script"]

SHELLS = ("bash", "zsh", "fish")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse has no public walk of its tree: its _actions it is.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    found = [
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    ]
    return sorted(set(found))


def command_table(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """``"cmd"`` / ``"cmd sub"`` to the words that may follow it ("" is the top level)."""
    table: dict[str, list[str]] = {}

    def walk(prefix: str, node: argparse.ArgumentParser) -> None:
        children = _subcommands(node)
        table[prefix] = sorted(children) + _options(node)
        for name, child in children.items():
            walk(f"{prefix} {name}".strip(), child)

    walk("", parser)
    return table


def _bash(table: dict[str, list[str]]) -> str:
    cases = "".join(
        f'        "{key}") words="{" ".join(words)}" ;;\n' for key, words in sorted(table.items())
    )
    return (
        "# rentcheck completion for bash: source it, or put it in bash-completion's directory\n"
        "_rentcheck() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" key="" w i\n'
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '        w="${COMP_WORDS[i]}"\n'
        '        [[ "$w" == -* ]] && continue\n'
        '        case "${key:+$key }$w" in\n'
        + "".join(f'            "{key}") key="{key}" ;;\n' for key in sorted(table) if key)
        + "        esac\n"
        "    done\n"
        "    local words\n"
        '    case "$key" in\n' + cases + "    esac\n"
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))\n'
        '    [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))\n'
        "}\n"
        "complete -o filenames -F _rentcheck rentcheck\n"
    )


def _zsh(table: dict[str, list[str]]) -> str:
    return (
        "#compdef rentcheck\n"
        "# rentcheck completion for zsh: put it on $fpath as _rentcheck\n"
        "autoload -U bashcompinit && bashcompinit\n" + _bash(table)
    )


def _fish(table: dict[str, list[str]]) -> str:
    lines = ["# rentcheck completion for fish: ~/.config/fish/completions/rentcheck.fish"]
    lines.append("complete -c rentcheck -f")
    for key, words in sorted(table.items()):
        path = key.split()
        if path:
            seen = " && ".join(f"__fish_seen_subcommand_from {w}" for w in path)
            condition = seen
        else:
            condition = "__fish_use_subcommand"
        for word in words:
            if word.startswith("--"):
                lines.append(f"complete -c rentcheck -n '{condition}' -l {word[2:]}")
            else:
                lines.append(f"complete -c rentcheck -n '{condition}' -a {word}")
    return "\n".join(lines) + "\n"


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    table = command_table(parser)
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](table)


def add_completion_parser(
    sub: argparse._SubParsersAction[Any], top: argparse.ArgumentParser
) -> None:
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL on stdout, e.g. "
        "`rentcheck completion bash > ~/.local/share/bash-completion/completions/rentcheck`.",
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help=", ".join(SHELLS))

    def run(args: argparse.Namespace) -> int:
        sys.stdout.write(completion_script(args.shell, top))
        return 0

    completion.set_defaults(handler=run)

"""The ``rentcheck`` command: argument parsing and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rentcheck import __version__
from rentcheck.errors import RentcheckError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

EXIT_ERROR = 2  # the same code as rentcheck.report.EXIT_ERROR (that module loads the model)

EPILOG = "exit codes: 0 clean, 1 findings at or above --fail-level, 2 usage/config/internal error"


def _terminal_width() -> int:
    """What argparse would ask ``shutil`` for, without importing it (and its compression
    modules) on every run: argparse builds a formatter for each argument it registers."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns) - 2
    try:
        found = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):
        found = 0
    return (found or 80) - 2


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_width())


class _Parser(argparse.ArgumentParser):
    """ArgumentParser with rentcheck's formatter, for the top level and every subcommand;
    an unknown option is refused by the command it was given to, with the nearest option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        import difflib
        import re

        typo = re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if typo is not None:  # a typo'd command: the nearest one (Python < 3.12 has none)
            commands = re.findall(r"'([^']*)'", message.split("choose from", 1)[-1])
            near = difflib.get_close_matches(typo.group(1), commands, n=1, cutoff=0.6)
            if near:
                message = f"unknown command {typo.group(1)!r} (did you mean {near[0]}?)"
        return super().error(message)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            target = _innermost(self, list(args or []))
            target.error(_unrecognized(target, extras))
        return parsed


def _innermost(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command parser the words of ``argv`` lead to."""
    node = parser
    for word in argv:
        children = next(
            (a.choices for a in node._actions if isinstance(a, argparse._SubParsersAction)),
            None,
        )
        if children is not None and word in children:
            node = children[word]
    return node


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    import difflib

    known = [o for a in parser._actions for o in a.option_strings]
    message = f"unrecognized arguments: {' '.join(extras)}"
    for extra in extras:
        if extra.startswith("-"):
            near = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1, cutoff=0.6)
            if near:
                return f"{message} (did you mean {near[0]}?)"
    return message


def _common() -> argparse.ArgumentParser:
    from rentcheck.config import OUTPUT_FORMATS

    common = _Parser(add_help=False)
    g = common.add_argument_group("common options")
    g.add_argument("--config", metavar="FILE", help="use this rentcheck.yaml / pyproject.toml")
    g.add_argument("--isolated", action="store_true", help="ignore config files")
    g.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default=None,
        help="how to print results (default: text)",
    )
    g.add_argument("-o", "--output-file", metavar="FILE", help="write results here (atomically)")
    g.add_argument(
        "--fail-level",
        choices=["note", "warning", "error"],
        default=None,
        help="lowest severity that makes the exit code 1 (default: warning)",
    )
    g.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    g.add_argument(
        "-q", "--quiet", action="store_true", help="findings only: no headline, no summary line"
    )
    g.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="auto: on a terminal, unless NO_COLOR is set; FORCE_COLOR turns it on",
    )
    g.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return common


def _command_index() -> dict[str, str]:
    """Which ``rentcheck.commands`` module registers each subcommand, from the gate table:
    a run imports only the module it needs (importing every gate's command module costs
    tens of milliseconds a lint run should not pay). Each module has
    ``add_parsers(sub, common)``, which registers its subcommands and sets ``handler``."""
    from rentcheck.gates.table import command_index

    return command_index()


def _wanted_module(argv: Sequence[str]) -> str | None:
    """The one command module this command line needs, or None for all (help, typos)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return _command_index().get(first) if first is not None else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    import importlib

    common = _common()
    parser = _Parser(
        prog="rentcheck",
        description="Runnable gates for training on rented GPUs.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"rentcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = _wanted_module(argv) if argv is not None else None
    if wanted is None:
        from rentcheck.gates.table import all_gates, command_modules

        # Help or an unknown command: every module, and every gate a plugin adds.
        for name in command_modules(all_gates()):
            importlib.import_module(f"rentcheck.commands.{name}").add_parsers(sub, common)
    else:
        importlib.import_module(f"rentcheck.commands.{wanted}").add_parsers(sub, common)
    if wanted is None:  # not a gate's command: completion reads the whole tree
        from rentcheck.commands.completion import add_completion_parser

        add_completion_parser(sub, parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["--version"], ["-V"]):  # answer without building the parser
        sys.stdout.write(f"rentcheck {__version__}\n")
        return 0
    debug = "--debug" in argv
    try:
        parser = build_parser(argv)
        passthrough: list[str] = []
        if _wanted_module(argv) == "gate" and argv[:1] == ["gate"]:
            from rentcheck.commands.gate import split_passthrough

            argv, passthrough = split_passthrough(argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse already printed usage + a one-line error
            return EXIT_ERROR if exc.code not in (0, None) else 0
        if passthrough:
            args.rest = passthrough
        if not getattr(args, "handler", None):
            parser.print_help()
            return EXIT_ERROR
        return int(args.handler(args))
    except RentcheckError as exc:
        if debug:
            raise
        from rentcheck.sanitise import sanitise  # error text can carry a box's stderr

        sys.stderr.write(f"rentcheck: error: {sanitise(str(exc))}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("rentcheck: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:
        if debug:
            raise
        from rentcheck.sanitise import sanitise

        detail = sanitise(" ".join(str(exc).split()))
        if len(detail) > 300:
            detail = detail[:300] + "…"
        sys.stderr.write(
            f"rentcheck: internal error: {type(exc).__name__}: {detail} "
            "(rerun with --debug for the traceback and report it)\n"
        )
        return EXIT_ERROR

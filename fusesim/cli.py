"""The `fusesim` command. Exit codes: 0 success, 2 bad input (one line on stderr), 1 internal error."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from fusesim import __version__
from fusesim.commands import COMMANDS
from fusesim.errors import InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage; keep it to one line
        sys.stderr.write(f"fusesim: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fusesim", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"fusesim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"fusesim.commands.{name.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("fusesim.commands"):
                continue  # command not built yet
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        sys.stderr.write(f"fusesim: error: {exc.line()}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("fusesim: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # our bug, not the user's: say so, with the traceback to report
        traceback.print_exc()
        sys.stderr.write(f"fusesim: internal error: {exc}\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

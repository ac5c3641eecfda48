"""One entry point per question, each with subcommands: the shared command line.

    main = cli.entry_point("benchmarks.train", __doc__, {"steps": "benchmarks.train_speed", ...})

Each subcommand's module gives `add_arguments(parser)` and `main(args) -> int`
(its `__doc__` is the subcommand's help); `args.command` names the subcommand.
A `UsageError` (or argparse's own) ends in one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys


class UsageError(Exception):
    """A mistake in the command line the user can fix: one line, exit status 2."""


def build_parser(prog: str, doc: str, commands: dict[str, str]) -> argparse.ArgumentParser:
    """The parser of `prog`: one subparser per command, from its module."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in commands.items():
        module = importlib.import_module(module_name)
        first = (module.__doc__ or "").strip().splitlines()[0]
        child = sub.add_parser(name, help=first, description=module.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(child)
        child.set_defaults(module=module)
    return parser


def entry_point(prog: str, doc: str, commands: dict[str, str]):
    """A `main(argv=None) -> int` running the subcommand named on the command line."""
    def main(argv=None) -> int:
        parser = build_parser(prog, doc, commands)
        args = parser.parse_args(argv)
        try:
            return args.module.main(args)
        except UsageError as error:
            parser.exit(2, f"{parser.prog} {args.command}: error: {error}\n")
    return main


def run(main) -> None:
    """`sys.exit(main())`, for a module's `if __name__ == "__main__"`."""
    sys.exit(main())

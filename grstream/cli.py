"""The ``grstream`` command line: one subcommand per module in grstream/commands/."""
import argparse
import importlib
import sys

from .errors import GrstreamError

#: subcommand name -> module in grstream.commands exposing add_parser(sub) and main(args) -> int
COMMANDS = ("generate", "shard", "info", "run")


def build_parser():
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="grstream",
        description="Process graphs larger than GPU memory: build shard stores and run GAS programs.")
    parser.add_argument("--version", action="version", version=f"grstream {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"grstream.commands.{name}").add_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GrstreamError as exc:
        if args.debug:
            raise
        print(f"grstream {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"grstream {args.command}: interrupted", file=sys.stderr)
        return 130
    except (OSError, MemoryError) as exc:
        if args.debug:
            raise
        print(f"grstream {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

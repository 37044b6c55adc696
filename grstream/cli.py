"""The ``grstream`` command line: one subcommand per module in grstream/commands/."""
import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading

from .errors import (EXIT_BROKEN_PIPE, EXIT_CODES, EXIT_INTERRUPTED, EXIT_SYSTEM, EXIT_TERMINATED,
                     Checkpointed, GrstreamError)

#: subcommand name -> module in grstream.commands exposing add_parser(sub) and main(args) -> int
COMMANDS = ("generate", "shard", "split", "info", "verify", "run")

SIZES_HELP = ("Byte sizes (--memory-budget, --memory-limit, --shard-size) are binary: "
              "K = KB = KiB = 1024, M = MB = MiB = 2^20, G, T, P likewise; a fraction of a unit "
              "is rounded to the nearest byte (1.5M = 1572864), a fraction of a byte is an error.")


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser. Options and positionals come in any order (argparse's intermixed
    parsing, where the command has no sub-subcommands), and options that need heavy imports are
    added by ``later(add)`` when the command is parsed or its help printed, so ``grstream --help``
    imports none of them; ``for_help(add)`` runs only before the help is printed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._later, self._for_help, self._intermixing = [], [], False

    def later(self, add):
        """Call ``add(self)`` before this parser is first used."""
        self._later.append(add)

    def for_help(self, add):
        """Call ``add(self)`` before this parser's help is first printed."""
        self._for_help.append(add)

    def _complete(self, hooks=()):
        for pending in (self._later,) + tuple(hooks):
            while pending:
                pending.pop(0)(self)

    def format_help(self):
        self._complete([self._for_help])
        return super().format_help()

    def parse_known_args(self, args=None, namespace=None):
        self._complete()
        nested = any(a.nargs in (argparse.PARSER, argparse.REMAINDER)
                     for a in self._get_positional_actions())
        if self._intermixing or nested:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so it unwinds (and cleans up) like Ctrl-C."""


def build_parser():
    from . import __version__
    codes = "\n".join(f"  {code:<4d} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = argparse.ArgumentParser(
        prog="grstream",
        description="Process graphs larger than GPU memory: build shard stores and run GAS programs.",
        epilog=f"{SIZES_HELP}\n\nexit status:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"grstream {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"grstream.commands.{name}").add_parser(sub)
    return parser


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Turn SIGTERM into :class:`Terminated` while the block runs, so temporaries are removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with sigterm_as_interrupt():
            status = int(args.func(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
            return status
    except BrokenPipeError:
        return _closed_pipe()
    except Checkpointed as exc:   # SIGTERM with --checkpoint: not an error (status 144)
        if exc.rank == 0:
            print(f"grstream {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except GrstreamError as exc:
        if args.debug:
            raise
        print(f"grstream {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        print(f"grstream {args.command}: {'terminated' if terminated else 'interrupted'}",
              file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except (OSError, MemoryError) as exc:
        if args.debug:
            raise
        print(f"grstream {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_SYSTEM


def _closed_pipe():
    """A reader that stopped early (``grstream info S | head -1``): quiet, status 141 as a
    command killed by SIGPIPE gets. What is still buffered for standard output is dropped, so
    the interpreter's exit does not report the pipe again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def _one_line(exc):
    # h5py's messages span lines (time stamp, buffer address, ...): the first says what failed
    lines = str(exc).splitlines() or [type(exc).__name__]
    return lines[0].rstrip(" (,")


if __name__ == "__main__":
    sys.exit(main())

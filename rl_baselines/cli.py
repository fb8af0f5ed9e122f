"""Command-line plumbing shared by the project's commands: one-line errors with exit code 2, one-line warnings."""
from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn

USAGE_EXIT_CODE = 2


class UsageError(Exception):
    """Bad input from the user: reported as one line on stderr, exit code 2."""


class CLIParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) and exit with code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def runCommand(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> NoReturn:
    """
    Run a command's ``main``, turning UsageError into ``<prog>: error: ...`` and exit code 2.

    :param main: the command's main function
    :param argv: its arguments (default: sys.argv[1:])
    """
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {message}\n"
    try:
        code = main(argv)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(USAGE_EXIT_CODE)
    sys.exit(code or 0)


def positiveInt(raw: str) -> int:
    """
    argparse type: an integer > 0 (scientific notation such as 1e6 accepted).

    :param raw: the command-line string
    :return: the value
    """
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None
    if not value.is_integer() or value <= 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be a positive integer")
    return int(value)


def nonNegativeInt(raw: str) -> int:
    """
    argparse type: an integer >= 0.

    :param raw: the command-line string
    :return: the value
    """
    if raw.strip() == "0":
        return 0
    return positiveInt(raw)


def portNumber(raw: str) -> int:
    """
    argparse type: a TCP port in 1..65535.

    :param raw: the command-line string
    :return: the port
    """
    value = positiveInt(raw)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number (1..65535)")
    return value

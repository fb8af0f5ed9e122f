"""Command-line plumbing shared by the project's commands: one-line errors with exit code 2, one-line warnings.

The parser and the runner live in environments.cli_errors (the lowest layer, so that every package can use them);
this module re-exports them for the RL and replay commands and adds the argument types those need.
"""
from __future__ import annotations

import argparse

from environments.cli_errors import (
    MAX_SEED,
    USAGE_EXIT_CODE,
    UsageError,
    checkWritableFolder,
    intInRange,
    positiveInt,
    runCommand,
    seedNumber,
)
from environments.cli_errors import OneLineParser as CLIParser

__all__ = ["CLIParser", "MAX_SEED", "USAGE_EXIT_CODE", "UsageError", "checkWritableFolder", "intInRange",
           "nonNegativeInt", "portNumber", "positiveInt", "runCommand", "seedNumber"]


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

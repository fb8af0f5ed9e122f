"""Re-export shim (published path): the command-line plumbing lives in :mod:`srl_toolbox.cli`.

``OneLineParser`` is the former name of :class:`srl_toolbox.cli.CLIParser`, kept for plugins written against it.
"""
from srl_toolbox.cli import (
    MAX_SEED,
    USAGE_EXIT_CODE,
    CLIParser,
    UsageError,
    checkWritableFolder,
    intInRange,
    nonNegativeInt,
    portNumber,
    positiveInt,
    runCommand,
    seedNumber,
)

OneLineParser = CLIParser

__all__ = ["CLIParser", "MAX_SEED", "OneLineParser", "USAGE_EXIT_CODE", "UsageError", "checkWritableFolder",
           "intInRange", "nonNegativeInt", "portNumber", "positiveInt", "runCommand", "seedNumber"]

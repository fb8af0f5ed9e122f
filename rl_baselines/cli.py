"""Re-export shim (published path): the command-line plumbing lives in :mod:`srl_toolbox.cli`."""
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

__all__ = ["CLIParser", "MAX_SEED", "USAGE_EXIT_CODE", "UsageError", "checkWritableFolder", "intInRange",
           "nonNegativeInt", "portNumber", "positiveInt", "runCommand", "seedNumber"]

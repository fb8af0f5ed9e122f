"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`srl_toolbox.cli` instead. Importing this module re-exports the names it always had and emits a
``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import it.
``OneLineParser`` is the former name of :class:`srl_toolbox.cli.CLIParser`.
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
from srl_toolbox.deprecation import warnMovedModule

OneLineParser = CLIParser

__all__ = ["CLIParser", "MAX_SEED", "OneLineParser", "USAGE_EXIT_CODE", "UsageError", "checkWritableFolder",
           "intInRange", "nonNegativeInt", "portNumber", "positiveInt", "runCommand", "seedNumber"]

warnMovedModule("environments.cli_errors", "srl_toolbox.cli")

"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`srl_toolbox.cli` instead. Importing this module re-exports the names it always had and emits a
``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import it.
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

__all__ = ["CLIParser", "MAX_SEED", "USAGE_EXIT_CODE", "UsageError", "checkWritableFolder", "intInRange",
           "nonNegativeInt", "portNumber", "positiveInt", "runCommand", "seedNumber"]

warnMovedModule("rl_baselines.cli", "srl_toolbox.cli")

"""The ``python -m rl_baselines.train`` command (its published interface).

The code lives in :mod:`rl_baselines.runs.train`; this module is the command's published name and
re-exports the names scripts use from it. It stays, and importing it emits no warning (unlike the deprecated
re-export shims, srl_toolbox.deprecation).
"""
from rl_baselines.runs.train import (
    DEFAULT_ALGO,
    DEFAULT_ENV,
    MIN_CNN_SIDE,
    TrainResult,
    baseParser,
    createRunFolder,
    hyperparamStrings,
    main,
    parseCommand,
    prepareRunFolder,
    trainCommand,
    trainInRunFolder,
    validate,
)
from srl_toolbox.cli import runCommand

__all__ = ["DEFAULT_ALGO", "DEFAULT_ENV", "MIN_CNN_SIDE", "TrainResult", "baseParser", "createRunFolder",
           "hyperparamStrings", "main", "parseCommand", "prepareRunFolder", "trainCommand", "trainInRunFolder",
           "validate"]

if __name__ == "__main__":
    runCommand(main)

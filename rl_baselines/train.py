"""The ``python -m rl_baselines.train`` command (published path, a re-export shim).

The code lives in :mod:`rl_baselines.runs.train`.
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

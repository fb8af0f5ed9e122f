"""The ``python -m rl_baselines.train`` command (its published interface).

The code lives in :mod:`rl_baselines.runs.train` and its training loop, :mod:`rl_baselines.runs.train_loop`; this
module is the command's published name, re-exports the names scripts use from them, and adds the process's own main
(:func:`commandMain`). It stays, and importing it emits no warning (unlike the deprecated re-export shims,
srl_toolbox.deprecation).
"""
import signal
from collections.abc import Sequence

from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from rl_baselines.runs.train import (
    DEFAULT_ALGO,
    DEFAULT_ENV,
    MIN_CNN_SIDE,
    TrainResult,
    baseParser,
    createRunFolder,
    main,
    parseCommand,
    prepareRunFolder,
    trainCommand,
    validate,
)
from rl_baselines.runs.train_loop import trainInRunFolder
from srl_toolbox.cli import runCommand

__all__ = ["DEFAULT_ALGO", "DEFAULT_ENV", "MIN_CNN_SIDE", "TrainResult", "baseParser", "commandMain", "createRunFolder",
           "hyperparamStrings", "main", "parseCommand", "prepareRunFolder", "trainCommand", "trainInRunFolder",
           "validate"]


def commandMain(argv: Sequence[str] | None = None) -> int:
    """
    The main of ``python -m rl_baselines.train``: :func:`main`, after which the process ignores SIGINT and SIGTERM
    until it exits (the run is over and saved; a Ctrl-C of the terminal or of a sweep meant to stop it would only
    turn the end of a finished run into a traceback). Before it, the two signals are unblocked: a process started
    from a thread that blocks them (a Ray worker's) inherits the mask, and could otherwise never be stopped.

    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    code = main(argv)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    runCommand(commandMain)

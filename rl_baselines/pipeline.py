"""The ``python -m rl_baselines.pipeline`` command (published path, a re-export shim).

The code lives in :mod:`rl_baselines.sweeps.pipeline`.
"""
from rl_baselines.sweeps.pipeline import PLOT_REFRESH_S, WAIT_S, buildParser, main
from srl_toolbox.cli import runCommand

__all__ = ["PLOT_REFRESH_S", "WAIT_S", "buildParser", "main"]

if __name__ == "__main__":
    runCommand(main)

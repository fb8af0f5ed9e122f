"""The ``python -m rl_baselines.pipeline`` command (its published interface).

The code lives in :mod:`rl_baselines.sweeps.pipeline`; this module is the command's published name and
re-exports the names scripts use from it. It stays, and importing it emits no warning (unlike the deprecated
re-export shims, srl_toolbox.deprecation).
"""
from rl_baselines.sweeps.pipeline import PLOT_REFRESH_S, WAIT_S, buildParser, main
from srl_toolbox.cli import runCommand

__all__ = ["PLOT_REFRESH_S", "WAIT_S", "buildParser", "main"]

if __name__ == "__main__":
    runCommand(main)

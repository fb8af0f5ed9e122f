"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.runs.run_logging` instead. Importing this module re-exports the names it always had
and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never
import it.
"""
from rl_baselines.runs.run_logging import (
    EPISODE_KEYS_PREFIX,
    MEAN_EPISODES,
    VISDOM_PERIOD_S,
    RunLogger,
    checkTensorboard,
    logScalars,
    sharedProgressLogger,
    tensorboardRunName,
)
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["EPISODE_KEYS_PREFIX", "MEAN_EPISODES", "RunLogger", "VISDOM_PERIOD_S", "checkTensorboard", "logScalars",
           "sharedProgressLogger", "tensorboardRunName"]

warnMovedModule("rl_baselines.run_logging", "rl_baselines.runs.run_logging")

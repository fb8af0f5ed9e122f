"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.runs.run_logging`."""
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

__all__ = ["EPISODE_KEYS_PREFIX", "MEAN_EPISODES", "RunLogger", "VISDOM_PERIOD_S", "checkTensorboard", "logScalars",
           "sharedProgressLogger", "tensorboardRunName"]

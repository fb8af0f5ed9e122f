"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.runs.run_policy`."""
from rl_baselines.runs.run_policy import (
    GOAL_OBSERVATION_KEYS,
    SUPPORTED_ENV_MODES,
    RunPolicy,
    agentObservationSpace,
    loadRunPolicy,
    readRunArgs,
    recordedSRLModelFolder,
)

__all__ = ["GOAL_OBSERVATION_KEYS", "RunPolicy", "SUPPORTED_ENV_MODES", "agentObservationSpace", "loadRunPolicy",
           "readRunArgs", "recordedSRLModelFolder"]

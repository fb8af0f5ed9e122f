"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.envs.factory` and
:mod:`rl_baselines.envs.wrappers`."""
from rl_baselines.envs.factory import (
    GOAL_KEYS,
    NORMALISATION_FILE,
    createEnvs,
    encodeObservations,
    envKwargsFromArgs,
    findVecNormalize,
    loadNormalisation,
    makeSingleEnv,
    normalisedKeys,
    saveNormalisation,
)
from rl_baselines.envs.wrappers import ActionRepeat, EpisodeStartRNG, ignoreInterruptInWorker, openMonitor

__all__ = ["ActionRepeat", "EpisodeStartRNG", "GOAL_KEYS", "NORMALISATION_FILE", "createEnvs", "encodeObservations",
           "envKwargsFromArgs", "findVecNormalize", "ignoreInterruptInWorker", "loadNormalisation", "makeSingleEnv",
           "normalisedKeys", "openMonitor", "saveNormalisation"]

"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.envs.factory` and :mod:`rl_baselines.envs.wrappers` instead. Importing this module
re-exports the names it always had and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation);
the project's own modules never import it.
"""
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
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["ActionRepeat", "EpisodeStartRNG", "GOAL_KEYS", "NORMALISATION_FILE", "createEnvs", "encodeObservations",
           "envKwargsFromArgs", "findVecNormalize", "ignoreInterruptInWorker", "loadNormalisation", "makeSingleEnv",
           "normalisedKeys", "openMonitor", "saveNormalisation"]

warnMovedModule("rl_baselines.utils", "rl_baselines.envs.factory and rl_baselines.envs.wrappers")

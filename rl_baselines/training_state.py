"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.core.training_state` and :mod:`rl_baselines.envs.wrappers` instead. Importing this
module re-exports the names it always had and emits a ``DeprecationWarning`` naming the new path
(srl_toolbox.deprecation); the project's own modules never import it.
"""
from rl_baselines.core.training_state import (
    BUFFER_ARRAYS_FILE,
    BUFFER_VALUES_FILE,
    RNG_FILE,
    baseVecEnv,
    captureEpisodeStarts,
    captureGlobalRNG,
    captureObjectState,
    countLines,
    freezeNextReset,
    generatorState,
    keepFirstLines,
    loadBuffer,
    progressLogger,
    restartEpisodes,
    restoreGlobalRNG,
    restoreObjectState,
    saveBuffer,
    setGeneratorState,
)
from rl_baselines.envs.wrappers import ActionRepeat, EpisodeStartRNG, ignoreInterruptInWorker, openMonitor
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["ActionRepeat", "BUFFER_ARRAYS_FILE", "BUFFER_VALUES_FILE", "EpisodeStartRNG", "RNG_FILE", "baseVecEnv",
           "captureEpisodeStarts", "captureGlobalRNG", "captureObjectState", "countLines", "freezeNextReset",
           "generatorState", "ignoreInterruptInWorker", "keepFirstLines", "loadBuffer", "openMonitor",
           "progressLogger", "restartEpisodes", "restoreGlobalRNG", "restoreObjectState", "saveBuffer",
           "setGeneratorState"]

warnMovedModule("rl_baselines.training_state", "rl_baselines.core.training_state and rl_baselines.envs.wrappers")
